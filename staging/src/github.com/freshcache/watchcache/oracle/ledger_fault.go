//go:build invariants

package oracle

// Break makes the Ledger prove spans it must not (f), or work again
// (NoFault): the negative controls of the history checks show with it
// that they catch a wrong ledger. It exists only in builds with the
// invariants tag, so that no production build can break a ledger.
func (l *Ledger) Break(f LedgerFault) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.fault = f
}
