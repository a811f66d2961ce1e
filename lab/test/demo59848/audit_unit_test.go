package demo59848

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReadAuditAndPath runs without any cluster: the audit reading and the
// condensed path the closing line prints.
func TestReadAuditAndPath(t *testing.T) {
	const user = "system:node:hollow-0"
	lines := []string{
		// Before the restart: left out.
		`{"auditID":"0","stage":"ResponseComplete","verb":"list","requestURI":"/api/v1/pods?resourceVersion=0","user":{"username":"system:node:hollow-0"},"objectRef":{"resource":"pods"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-12-01T09:00:00Z","stageTimestamp":"2026-12-01T09:00:00Z"}`,
		// A watch-list whose stream ends after 5.6 s, then its LIST fallback twice.
		`{"auditID":"1","stage":"ResponseStarted","verb":"watch","requestURI":"/api/v1/pods?fieldSelector=spec.nodeName%3Dhollow-0&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true","user":{"username":"system:node:hollow-0"},"objectRef":{"resource":"pods"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-12-01T09:01:00Z","stageTimestamp":"2026-12-01T09:01:03Z"}`,
		`{"auditID":"2","stage":"ResponseComplete","verb":"list","requestURI":"/api/v1/pods?limit=500&resourceVersion=0","user":{"username":"system:node:hollow-0"},"objectRef":{"resource":"pods"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-12-01T09:01:06Z","stageTimestamp":"2026-12-01T09:01:06Z"}`,
		`{"auditID":"1","stage":"ResponseComplete","verb":"watch","requestURI":"/api/v1/pods?fieldSelector=spec.nodeName%3Dhollow-0&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true","user":{"username":"system:node:hollow-0"},"objectRef":{"resource":"pods"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-12-01T09:01:00Z","stageTimestamp":"2026-12-01T09:01:05.6Z"}`,
		`{"auditID":"3","stage":"ResponseComplete","verb":"list","requestURI":"/api/v1/pods?limit=500&resourceVersion=0","user":{"username":"system:node:hollow-0"},"objectRef":{"resource":"pods"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-12-01T09:01:07Z","stageTimestamp":"2026-12-01T09:01:07Z"}`,
		// Another user, another resource: left out.
		`{"auditID":"4","stage":"ResponseComplete","verb":"list","requestURI":"/api/v1/pods","user":{"username":"admin"},"objectRef":{"resource":"pods"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-12-01T09:01:08Z","stageTimestamp":"2026-12-01T09:01:08Z"}`,
		`{"auditID":"5","stage":"ResponseComplete","verb":"get","requestURI":"/api/v1/nodes/hollow-0","user":{"username":"system:node:hollow-0"},"objectRef":{"resource":"nodes","name":"hollow-0"},"responseStatus":{"code":500},"requestReceivedTimestamp":"2026-12-01T09:01:08Z","stageTimestamp":"2026-12-01T09:02:08Z"}`,
	}
	file := filepath.Join(t.TempDir(), "audit.log")
	data := ""
	for _, l := range lines {
		data += l + "\n"
	}
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	since := time.Date(2026, 12, 1, 9, 1, 0, 0, time.UTC)
	pods, err := readAudit(file, user, "pods", since)
	if err != nil {
		t.Fatal(err)
	}
	want := `WATCH pods rv="" resourceVersionMatch=NotOlderThan sendInitialEvents=true -> 200 (stream started after 3s, ended after 5.6s); LIST pods rv="0" limit=500 -> 200 x2`
	if got := path(pods); got != want {
		t.Errorf("pods path\n got %s\nwant %s", got, want)
	}
	nodes, err := readAudit(file, user, "nodes", since)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := path(nodes), `GET nodes hollow-0 -> 500 (after 1m0s)`; got != want {
		t.Errorf("nodes path\n got %s\nwant %s", got, want)
	}
}
