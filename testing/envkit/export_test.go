package envkit

// EventuallyWithin is Poller.Eventually with the deadline timeout instead
// of WaitTimeout: wait_test.go tests the time-out with a short one.
var EventuallyWithin = Poller.eventually
