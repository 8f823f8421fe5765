package ledger

// Held re-checks: a change that may alter what blocks a waiting slice
// schedules a re-check of the waiters on a timer (changedLocked). The
// SDK's unit-test harness has no clock: it holds the re-checks and runs
// them itself when its queues are empty, so that a test sees every
// waiter told what blocks it now, with no sleep.

// HoldRefreshes makes the ledger schedule no timer for its re-checks of
// the waiting slices: a re-check a change asks for stays pending until
// RunPendingRefresh runs it. It returns a function that lets the timers
// run again (a re-check still pending is then scheduled as usual).
func (l *Ledger) HoldRefreshes() (release func()) {
	l.lock()
	l.refreshHeld = true
	l.unlock()
	return func() {
		l.lock()
		defer l.unlock()
		l.refreshHeld = false
		if l.refreshArmed {
			l.refreshArmed = false
			l.changedLocked()
		}
	}
}

// RunPendingRefresh runs now the re-check of the waiting slices that a
// change asked for while refreshes are held (HoldRefreshes), waking the
// waiters whose block changed; it reports whether one was pending.
func (l *Ledger) RunPendingRefresh() bool {
	l.lock()
	pending := l.refreshHeld && l.refreshArmed
	l.unlock()
	if pending {
		l.refresh()
	}
	return pending
}
