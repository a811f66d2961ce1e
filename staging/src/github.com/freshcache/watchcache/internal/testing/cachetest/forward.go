package cachetest

import (
	"sync"

	"k8s.io/apimachinery/pkg/watch"
)

// forwardingWatch is a watch whose maker's goroutine forwards events from
// inner to out (send) until Stop; it closes out when it ends.
type forwardingWatch struct {
	inner watch.Interface
	out   chan watch.Event
	done  chan struct{}
	once  sync.Once
}

func newForwardingWatch(inner watch.Interface) *forwardingWatch {
	return &forwardingWatch{inner: inner, out: make(chan watch.Event), done: make(chan struct{})}
}

// send hands ev to the watch's reader; false once the watch is stopped.
func (w *forwardingWatch) send(ev watch.Event) bool {
	select {
	case w.out <- ev:
		return true
	case <-w.done:
		return false
	}
}

// Stop implements watch.Interface; it stops inner too.
func (w *forwardingWatch) Stop() {
	w.once.Do(func() {
		close(w.done)
		w.inner.Stop()
	})
}

// ResultChan implements watch.Interface.
func (w *forwardingWatch) ResultChan() <-chan watch.Event { return w.out }

// FilterWatch is w without the events keep refuses, as a store that lost
// them would watch. keep runs on the forwarding goroutine, one event at a
// time.
func FilterWatch(w watch.Interface, keep func(watch.Event) bool) watch.Interface {
	fw := newForwardingWatch(w)
	go func() {
		defer close(fw.out)
		for ev := range w.ResultChan() {
			if keep(ev) && !fw.send(ev) {
				return
			}
		}
	}()
	return fw
}
