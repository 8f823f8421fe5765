package owned

// Remembered is how many objects a remembers having applied, over every
// slice: the tests check that the memory does not outlive the sets.
func Remembered(a *Applier) int { return a.memory.size() }
