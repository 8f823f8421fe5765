package faults

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// fault is a kind of injected API failure.
type fault int

const (
	// faultBefore answers 500 or 503 without sending the request: the
	// server never sees it.
	faultBefore fault = iota
	// faultLost sends a write and, when the server applied it (2xx), drops
	// the answer and returns 500: the client believes it failed.
	faultLost
	// faultThrottled answers 429 with Retry-After: 1 without sending; the
	// client waits and sends again.
	faultThrottled
	// faultWatch refuses a watch: a 500 or a connection error.
	faultWatch
	// faultEvent fails an event write (core or events.k8s.io) with 500.
	faultEvent
	// faultCut ends a watch the server was streaming, as a load balancer
	// or a server shutting down does: the client watches again, and the
	// refusals above then matter.
	faultCut
	numFaults
)

var faultNames = [numFaults]string{"before", "lost", "throttled", "watch", "event", "cut"}

// faultRates are the probabilities of each fault. before, lost and
// throttled share one draw per request other than a watch or an event
// write (lost applies to writes only); watch and event apply to their
// requests (and the first watch of each resource is always refused when
// watch is not zero). A watch let through is cut after a random time up to cutWithin
// (never when zero).
type faultRates struct {
	before, lost, throttled float64
	watch, event            float64
	cutWithin               time.Duration
	// statusLost and statusRefused apply to status PATCHes on
	// ResourceSlices instead of before, lost and throttled when either is
	// set: a share applied with the answer lost (503), a share refused
	// with 503 before it is sent, the rest answered as the server answers.
	statusLost, statusRefused float64
}

// injector injects faults into every transport it wraps, at random from
// one seeded source; it counts them by kind and records the status writes
// on ResourceSlices as the server answered them. A rest.Config builds
// several transports (client, cache, events, discovery): all share it.
type injector struct {
	rates faultRates

	mu  sync.Mutex
	rng *rand.Rand

	injected [numFaults]atomic.Int64
	requests atomic.Int64
	// watched holds the paths watched so far.
	watched sync.Map
	writes  *statusWrites
}

func newInjector(rates faultRates, seed int64) *injector {
	return &injector{rates: rates, rng: rand.New(rand.NewSource(seed)), writes: newStatusWrites()}
}

// config returns a copy of base whose transports go through the injector.
func (in *injector) config(base *rest.Config) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &faultyTransport{next: rt, in: in} })
	return cfg
}

// draw returns a number in [0, 1) from the seeded source.
func (in *injector) draw() float64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.rng.Float64()
}

// firstWatch reports whether req is the first watch of its resource: with
// any watch faults, that one is always refused, so that every informer
// starts after a refusal.
func (in *injector) firstWatch(req *http.Request) bool {
	_, seen := in.watched.LoadOrStore(req.URL.Path, true)
	return !seen
}

// count returns how many faults of kind were injected.
func (in *injector) count(kind fault) int64 { return in.injected[kind].Load() }

// total returns how many faults were injected.
func (in *injector) total() int64 {
	var n int64
	for k := range numFaults {
		n += in.count(k)
	}
	return n
}

// faultyTransport is one transport wrapped by an injector.
type faultyTransport struct {
	next http.RoundTripper
	in   *injector
}

// errRefused is the connection error a refused watch may get.
var errRefused = errors.New("injected fault: connection refused")

// RoundTrip implements http.RoundTripper.
func (f *faultyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	in, rates := f.in, f.in.rates
	in.requests.Add(1)
	switch {
	case isWatch(req):
		r := in.draw()
		if first := rates.watch > 0 && in.firstWatch(req); first || r < rates.watch {
			in.injected[faultWatch].Add(1)
			if r < rates.watch/2 {
				return refuse(req, nil, errRefused)
			}
			return refuse(req, injectedAnswer(req, http.StatusInternalServerError), nil)
		}
		resp, err := f.next.RoundTrip(req)
		if err == nil && rates.cutWithin > 0 {
			// r is uniform in [rates.watch, 1): it picks the time too.
			after := time.Duration((r - rates.watch) / (1 - rates.watch) * float64(rates.cutWithin))
			resp.Body = cutAfter(resp.Body, after, func() { in.injected[faultCut].Add(1) })
		}
		return resp, err
	case isEventWrite(req):
		if in.draw() < rates.event {
			in.injected[faultEvent].Add(1)
			return refuse(req, injectedAnswer(req, http.StatusInternalServerError), nil)
		}
		return f.next.RoundTrip(req)
	}
	if _, ok := statusPatchOf(req); ok && rates.statusLost+rates.statusRefused > 0 {
		switch r := in.draw(); {
		case r < rates.statusLost:
			resp, err := f.send(req)
			if err != nil || resp.StatusCode < 200 || resp.StatusCode >= 300 {
				return resp, err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			in.injected[faultLost].Add(1)
			return injectedAnswer(req, http.StatusServiceUnavailable), nil
		case r < rates.statusLost+rates.statusRefused:
			in.injected[faultBefore].Add(1)
			return refuse(req, injectedAnswer(req, http.StatusServiceUnavailable), nil)
		}
		return f.send(req)
	}
	r := in.draw()
	switch {
	case r < rates.before:
		in.injected[faultBefore].Add(1)
		code := http.StatusInternalServerError
		if r < rates.before/2 {
			code = http.StatusServiceUnavailable
		}
		return refuse(req, injectedAnswer(req, code), nil)
	case r < rates.before+rates.throttled:
		in.injected[faultThrottled].Add(1)
		resp := injectedAnswer(req, http.StatusTooManyRequests)
		resp.Header.Set("Retry-After", "1")
		return refuse(req, resp, nil)
	case r < rates.before+rates.throttled+rates.lost && req.Method != http.MethodGet:
		resp, err := f.send(req)
		if err != nil || resp.StatusCode < 200 || resp.StatusCode >= 300 {
			return resp, err // not applied: nothing to lose
		}
		// The server applied the write; the client never learns it.
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		in.injected[faultLost].Add(1)
		return injectedAnswer(req, http.StatusInternalServerError), nil
	}
	return f.send(req)
}

// send forwards req and records it if it is a status write.
func (f *faultyTransport) send(req *http.Request) (*http.Response, error) {
	key, isStatusPatch := statusPatchOf(req)
	resp, err := f.next.RoundTrip(req)
	if isStatusPatch {
		f.in.writes.record(key, resp, err)
	}
	return resp, err
}

// cutBody is a watch's stream that a timer ends.
type cutBody struct {
	io.ReadCloser
	timer *time.Timer
}

// cutAfter closes body after d, unless the client closed it first; cut is
// called when it does. A Read blocked on the stream then fails, as when
// the connection drops.
func cutAfter(body io.ReadCloser, d time.Duration, cut func()) io.ReadCloser {
	return &cutBody{ReadCloser: body, timer: time.AfterFunc(d, func() {
		cut()
		_ = body.Close()
	})}
}

// Close implements io.Closer.
func (b *cutBody) Close() error {
	b.timer.Stop()
	return b.ReadCloser.Close()
}

// refuse answers req without sending it; a RoundTripper must close the
// request body whatever it does.
func refuse(req *http.Request, resp *http.Response, err error) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return resp, err
}

// injectedAnswer is a Status answer with code, as the API server would send.
func injectedAnswer(req *http.Request, code int) *http.Response {
	body, _ := json.Marshal(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Code:     int32(code),
		Message:  fmt.Sprintf("injected fault: %d on %s %s", code, req.Method, req.URL.Path),
	})
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", code, http.StatusText(code)),
		StatusCode:    code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

func isWatch(req *http.Request) bool {
	w := req.URL.Query().Get("watch")
	return w == "true" || w == "1"
}

func isEventWrite(req *http.Request) bool {
	if req.Method != http.MethodPost && req.Method != http.MethodPatch && req.Method != http.MethodPut {
		return false
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	for i, p := range parts {
		if p == "events" && i > 0 && parts[i-1] != "namespaces" {
			return true
		}
	}
	return false
}

// statusPatchOf reports whether req patches a ResourceSlice's status, and
// which one ("namespace/name"): the path ends in
// namespaces/NS/resourceslices/NAME/status.
func statusPatchOf(req *http.Request) (string, bool) {
	if req.Method != http.MethodPatch {
		return "", false
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	n := len(parts)
	if n < 5 || parts[n-1] != "status" || parts[n-3] != "resourceslices" || parts[n-5] != "namespaces" {
		return "", false
	}
	return parts[n-4] + "/" + parts[n-2], true
}

// statusWrites counts the status PATCHes on ResourceSlices that went through
// a transport, as the server answered them, per slice.
type statusWrites struct {
	mu sync.Mutex
	// applied counts the PATCHes the server answered 2xx, per slice:
	// including those whose answer faultLost then hid from the client.
	applied map[string]int
	// unknown counts the PATCHes that got no answer (a transport error):
	// the server may or may not have applied them.
	unknown map[string]int
	// sent counts the PATCHes the server answered, whatever the code;
	// conflicts, those it answered 409.
	sent, conflicts int
	// first and last are when the first and the last 2xx answers arrived.
	first, last time.Time
}

func newStatusWrites() *statusWrites {
	return &statusWrites{applied: map[string]int{}, unknown: map[string]int{}}
}

func (w *statusWrites) record(key string, resp *http.Response, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.unknown[key]++
		return
	}
	w.sent++
	if resp.StatusCode == http.StatusConflict {
		w.conflicts++
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		w.applied[key]++
		now := time.Now()
		if w.first.IsZero() {
			w.first = now
		}
		w.last = now
	}
}

// totals returns the 2xx PATCHes, the PATCHes answered and the PATCHes
// without an answer so far.
func (w *statusWrites) totals() (applied, sent, unknown int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range w.applied {
		applied += n
	}
	for _, n := range w.unknown {
		unknown += n
	}
	return applied, w.sent, unknown
}

// conflicted returns how many PATCHes the server answered 409.
func (w *statusWrites) conflicted() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.conflicts
}

// of returns the 2xx and unanswered PATCHes of one slice.
func (w *statusWrites) of(key string) (applied, unknown int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.applied[key], w.unknown[key]
}

// lastApplied is when the last 2xx answer arrived.
func (w *statusWrites) lastApplied() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}
