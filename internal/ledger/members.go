package ledger

import "slices"

// Members returns the sorted names of the members of the cohort named
// name, without duplicates; none when no budget ever joined it. Unlike
// get, it makes no cohort.
func (cs *Cohorts) Members(name string) []string {
	cs.mu.Lock()
	c := cs.by[name]
	cs.mu.Unlock()
	if c == nil {
		return nil
	}
	return slices.Compact(c.Members())
}
