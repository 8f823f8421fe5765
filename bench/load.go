package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// loadavgPath is where Linux publishes the load average.
const loadavgPath = "/proc/loadavg"

// minRounds is the fewest throughput rounds whose medians the bench judges:
// single rounds on a shared machine spread by ±15–50%, and a median of three
// discards one outlier.
const minRounds = 3

// parseLoadavg returns the 1-minute load average from the content of
// /proc/loadavg ("0.52 0.58 0.59 1/467 12345").
func parseLoadavg(s string) (float64, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return 0, errors.New(loadavgPath + " is empty")
	}
	l, err := strconv.ParseFloat(fields[0], 64)
	if err != nil || l < 0 || math.IsInf(l, 0) || math.IsNaN(l) {
		return 0, fmt.Errorf("%s: %q is not a load average", loadavgPath, fields[0])
	}
	return l, nil
}

// readLoad is the machine's 1-minute load average; ok is false where there
// is none to read (not Linux) or it does not parse.
func readLoad() (l float64, ok bool) {
	raw, err := os.ReadFile(loadavgPath)
	if err != nil {
		return 0, false
	}
	l, err = parseLoadavg(string(raw))
	return l, err == nil
}

// loadCheck is the machine's load when a measured stretch (a throughput
// round, the steady state) started and when it ended.
type loadCheck struct {
	// what names the stretch: "round 2/3", "the steady state".
	what       string
	start, end float64
	// known and endKnown are false where the load cannot be read.
	known, endKnown bool
}

// busy reports whether the stretch started with the load above cores.
func (c loadCheck) busy(cores int) bool { return c.known && c.start > float64(cores) }

// noVerdict returns why a run's figures cannot be judged against their
// targets, one line per reason, or nothing when they can: fewer than
// minRounds throughput rounds, or a stretch that started while the
// machine's load was above its cores (other work then takes the CPU that
// the API server, etcd and the controller share, and the ratios measure the
// machine). An unknown load is no reason: the bench cannot tell.
func noVerdict(rounds int, checks []loadCheck, cores int) []string {
	var why []string
	if rounds < minRounds {
		why = append(why, fmt.Sprintf("%d round(s): a verdict needs the medians of at least %d", rounds, minRounds))
	}
	for _, c := range checks {
		if c.busy(cores) {
			why = append(why, fmt.Sprintf("load %.2f > %d cores at the start of %s: rerun later", c.start, cores, c.what))
		}
	}
	return why
}

// loadStr is a load reading for the progress lines and the table.
func loadStr(l float64, known bool) string {
	if !known {
		return "unknown"
	}
	return fmt.Sprintf("%.2f", l)
}

// loadWatch reads the load around each measured stretch, giving the machine
// up to settle to calm down first.
type loadWatch struct {
	cores  int
	settle time.Duration
	checks []loadCheck
}

// start records the load at the start of the stretch what and returns the
// function that records it at its end. Between stretches the bench does
// nothing, so a load above the cores is the last stretch's own work fading
// (the 1-minute average decays by half in about 42 s) or other work on the
// machine: start waits, up to w.settle, for the first to pass, and reads the
// load then. Whatever remains counts against the run (noVerdict); once a
// stretch has started busy the run has no verdict, and later stretches no
// longer wait.
func (w *loadWatch) start(what string) (end func()) {
	l, known := readLoad()
	if known && l > float64(w.cores) && w.settle > 0 && !w.busy() {
		say("%s: load %.2f > %d cores, waiting up to %s for it to fall...", what, l, w.cores, w.settle)
		deadline := time.Now().Add(w.settle)
		for l > float64(w.cores) && time.Now().Before(deadline) {
			// The kernel updates the average every 5 s.
			time.Sleep(min(5*time.Second, time.Until(deadline)))
			l, known = readLoad()
		}
	}
	w.checks = append(w.checks, loadCheck{what: what, start: l, known: known})
	i := len(w.checks) - 1
	say("%s starts: load %s (1 min), %d cores", what, loadStr(l, known), w.cores)
	return func() {
		l, known := readLoad()
		w.checks[i].end, w.checks[i].endKnown = l, known
		say("%s ends: load %s (1 min), %d cores", what, loadStr(l, known), w.cores)
	}
}

// busy reports whether a stretch so far started with the load above the
// cores.
func (w *loadWatch) busy() bool {
	for _, c := range w.checks {
		if c.busy(w.cores) {
			return true
		}
	}
	return false
}

// summary is the loads at the start and end of each stretch, for the table.
func (w *loadWatch) summary() string {
	if len(w.checks) == 0 {
		return ""
	}
	parts := make([]string, len(w.checks))
	for i, c := range w.checks {
		parts[i] = fmt.Sprintf("%s %s→%s", c.what, loadStr(c.start, c.known), loadStr(c.end, c.endKnown))
	}
	return strings.Join(parts, ", ")
}
