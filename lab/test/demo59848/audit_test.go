package demo59848

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"
)

// auditPolicy logs, at Metadata level, every pods and nodes request of the
// node's kubelet (user system:node:<node>): the requestURI carries
// resourceVersion, resourceVersionMatch and sendInitialEvents. Nodes too,
// because the kubelet lists its pods only once its node informer has
// synced.
func auditPolicy(node string) string {
	return `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["system:node:` + node + `"]
  resources:
  - group: ""
    resources: ["pods", "pods/status", "nodes", "nodes/status"]
- level: None
`
}

type auditEvent struct {
	AuditID    string `json:"auditID"`
	StageName  string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"responseStatus"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
	Stage           time.Time `json:"stageTimestamp"`
}

// request is one request as the audit log last saw it.
type request struct {
	received time.Time
	verb     string
	resource string
	what     string // the query that matters, or the object and subresource
	code     int
	stage    string
	took     time.Duration // until the last stage
	answered time.Duration // until ResponseStarted (watches)
}

func (r request) String() string {
	code := fmt.Sprint(r.code)
	switch {
	case r.stage == "ResponseStarted":
		code += " (stream still open)"
	case r.verb == "watch":
		// A watch's code is the one it started with; an error that ends
		// it comes inside the stream. When it started and how long it
		// lasted tell a failed or held watch-list from an answered one.
		if r.answered >= time.Second {
			code += fmt.Sprintf(" (stream started after %s, ended after %s)", r.answered.Round(100*time.Millisecond), r.took.Round(100*time.Millisecond))
		} else {
			code += fmt.Sprintf(" (ended after %s)", r.took.Round(100*time.Millisecond))
		}
	case r.took >= time.Second:
		code += fmt.Sprintf(" (after %s)", r.took.Round(100*time.Millisecond))
	}
	return fmt.Sprintf("%s %s %s -> %s", strings.ToUpper(r.verb), r.resource, r.what, code)
}

// readAudit returns the user's requests for resource received at or after
// since, in arrival order, each at its last stage.
func readAudit(path, user, resource string, since time.Time) ([]request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	byID := map[string]*request{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if ev.User.Username != user || ev.ObjectRef == nil || ev.ObjectRef.Resource != resource || ev.RequestReceived.Before(since) {
			continue
		}
		r := byID[ev.AuditID]
		if r == nil {
			r = &request{received: ev.RequestReceived, verb: ev.Verb, resource: resource, what: describe(ev)}
			byID[ev.AuditID] = r
		}
		// ResponseComplete (or Panic) follows ResponseStarted.
		if r.stage == "" || r.stage == "ResponseStarted" {
			r.stage, r.took = ev.StageName, ev.Stage.Sub(ev.RequestReceived)
			if ev.StageName == "ResponseStarted" {
				r.answered = r.took
			}
			if ev.ResponseStatus != nil {
				r.code = ev.ResponseStatus.Code
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make([]request, 0, len(byID))
	for _, r := range byID {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].received.Before(out[j].received) })
	return out, nil
}

// describe keeps the parameters that decide where a read is served from.
func describe(ev auditEvent) string {
	if ev.ObjectRef.Name != "" && ev.Verb != "list" && ev.Verb != "watch" {
		s := ev.ObjectRef.Name
		if ev.ObjectRef.Subresource != "" {
			s += "/" + ev.ObjectRef.Subresource
		}
		return s
	}
	u, err := url.Parse(ev.RequestURI)
	if err != nil {
		return ev.RequestURI
	}
	q := u.Query()
	var parts []string
	parts = append(parts, fmt.Sprintf("rv=%q", q.Get("resourceVersion")))
	for _, k := range []string{"resourceVersionMatch", "sendInitialEvents", "limit"} {
		if v := q.Get(k); v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ")
}

// path condenses the requests: runs of the same request and answer become
// one entry with a count.
func path(reqs []request) string {
	var out []string
	for i := 0; i < len(reqs); {
		j := i
		for j < len(reqs) && reqs[j].String() == reqs[i].String() {
			j++
		}
		s := reqs[i].String()
		if j-i > 1 {
			s += fmt.Sprintf(" x%d", j-i)
		}
		out = append(out, s)
		i = j
	}
	return strings.Join(out, "; ")
}
