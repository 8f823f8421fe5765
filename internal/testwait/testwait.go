package testwait

import "time"

// Timeout is how long a test waits for something to happen before it
// fails. A wait that normally ends in 100 ms can take tens of seconds on a
// loaded machine (a load average of 28 on 2 cores, in CI): the deadline
// is far past anything such a machine reaches. Past two minutes, something
// is wrong, and the test fails rather than hangs.
const Timeout = 2 * time.Minute
