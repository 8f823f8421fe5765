package ledger

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// What a consumer's running pods use.
//
// Liqo enforces a slice's Quota on new ShadowPods only: pods already
// running outlive a smaller grant. So a slice holds, besides its grant and
// its Quota, what the running ShadowPods of its Quota's user are charged
// (the label liqo.io/creator-user, which Liqo's webhook sets from the
// requesting identity), and capacity freed by a smaller grant is free only
// as those pods end.

// pod is one running ShadowPod: its user, its charge, and what eviction
// needs of it.
type pod struct {
	user   string
	charge corev1.ResourceList
	meta   PodMeta
}

// PodMeta is what eviction needs of a ShadowPod beyond its charge: its UID
// (a deletion's precondition) and its creation time (the newest go first).
type PodMeta struct {
	UID     types.UID
	Created time.Time
}

// userUse is what one user's running pods are charged, the pods, and the
// slices whose Quotas name the user.
type userUse struct {
	sum    corev1.ResourceList
	pods   map[types.NamespacedName]bool
	slices map[types.NamespacedName]bool
	// kept: with a pod index, the user's pods are kept (a slice that may
	// count them names the user; see keepsPods).
	kept bool
}

// RunningPod is a running ShadowPod as a pod index lists it: its key,
// its charge and what eviction needs of it.
type RunningPod struct {
	Key    types.NamespacedName
	Charge corev1.ResourceList
	Meta   PodMeta
}

// PodIndex lists the running ShadowPods charged to a user, as the watch
// that feeds ObservePod holds them now (an informer's indexer: it is
// updated before the watch's handlers are told, so a pod it does not list
// yet is still to be observed). It is called under the ledger's lock and
// must not call the ledger.
type PodIndex func(user string) []RunningPod

// SetPodIndex makes the ledger keep only the pods of the users named by
// the Quotas of slices that may count them (members of the budget, those
// that left it still capped, and those not seen yet): a pod of any other
// user is not kept when observed, and a user's pods are read from index
// when such a slice first names the user (and dropped when none does any
// more). So a set of classes whose budgets share one ShadowPod watch keeps
// each pod in the budget that counts it, not in every budget. The pods
// kept so far are replaced now by what index lists of the users whose pods
// are kept. The func it returns unsets index, unless another was set
// since.
func (l *Ledger) SetPodIndex(index PodIndex) (unset func()) {
	box := &podIndexBox{index: index}
	l.record(func() {
		b := &l.books
		b.podIndex = box
		users := make([]string, 0, len(b.users))
		for user, u := range b.users {
			b.dropPodsOf(user, u)
			users = append(users, user)
		}
		for _, user := range users {
			b.syncPodsOf(user)
			if u := b.users[user]; u != nil && !u.kept {
				b.recountUser(user, u) // its slices' pods are gone
			}
		}
	})
	return func() {
		l.record(func() {
			if l.books.podIndex == box {
				l.books.podIndex = nil
			}
		})
	}
}

// podIndexBox holds a PodIndex, so that SetPodIndex's unset can tell its
// own from a later one.
type podIndexBox struct{ index PodIndex }

// ObservePod records a ShadowPod key of user, running (not Succeeded or
// Failed), charged charge. A pod that ended is forgotten with ForgetPod.
// The ledger keeps charge as given: the caller must not change it.
func (l *Ledger) ObservePod(key types.NamespacedName, user string, charge corev1.ResourceList, meta PodMeta) {
	l.record(func() { l.books.observePod(key, pod{user: user, charge: charge, meta: meta}) })
}

// observePod records the running pod key; with a pod index, only when its
// user's pods are kept (a pod that moved to a user whose are not is
// forgotten).
func (b *books) observePod(key types.NamespacedName, p pod) {
	if b.podIndex != nil {
		if u := b.users[p.user]; u == nil || !u.kept {
			b.forgetPod(key)
			return
		}
	}
	if old, ok := b.pods[key]; ok {
		b.chargeUser(old.user, old.charge, -1)
		b.podOfUser(old.user, key, false)
	}
	b.pods[key] = p
	b.podOfUser(p.user, key, true)
	b.chargeUser(p.user, p.charge, 1)
}

// keepsPods reports whether the slice's pods matter to the budget: it is a
// member, or left the budget still capped (what it holds is counted), or
// has not been seen yet (its class is not known).
func (e *entry) keepsPods() bool {
	return !e.seen || e.member || e.frozen != nil
}

// wantsPodsOf reports whether a slice whose pods matter names user.
func (b *books) wantsPodsOf(user string, u *userUse) bool {
	for key := range u.slices {
		if e := b.slices[key]; e == nil || e.keepsPods() {
			return true
		}
	}
	return false
}

// syncPodsOf brings what is kept of user's pods in line with whether a
// slice whose pods matter names the user, with a pod index: its pods are
// read from the index when one starts to, and dropped when none does any
// more.
func (b *books) syncPodsOf(user string) {
	u := b.users[user]
	if b.podIndex == nil || u == nil {
		return
	}
	switch want := b.wantsPodsOf(user, u); {
	case want && !u.kept:
		u.kept = true
		b.pullPodsOf(user, u)
	case !want && u.kept:
		b.dropPodsOf(user, u)
		if u := b.users[user]; u != nil {
			b.recountUser(user, u)
		}
	}
}

// pullPodsOf records the running pods the pod index lists for user, whose
// pods are kept from now on, and recounts the user's slices once.
func (b *books) pullPodsOf(user string, u *userUse) {
	for _, rp := range b.podIndex.index(user) {
		if old, ok := b.pods[rp.Key]; ok {
			if old.user == user {
				for n, q := range old.charge {
					sub(u.sum, n, q)
				}
			} else {
				b.chargeUser(old.user, old.charge, -1)
				b.podOfUser(old.user, rp.Key, false)
			}
		}
		b.pods[rp.Key] = pod{user: user, charge: rp.Charge, meta: rp.Meta}
		b.podOfUser(user, rp.Key, true)
		for n, q := range rp.Charge {
			add(u.sum, n, q)
		}
	}
	b.recountUser(user, u)
}

// dropPodsOf forgets the pods of user, whose pods are no longer kept, and
// the user too when no slice names it.
func (b *books) dropPodsOf(user string, u *userUse) {
	for key := range u.pods {
		delete(b.pods, key)
	}
	u.pods, u.sum, u.kept = nil, corev1.ResourceList{}, false
	if len(u.slices) == 0 {
		delete(b.users, user)
	}
}

// KeptPods is how many running pods the ledger keeps (with a pod index,
// those of the users its slices' Quotas name).
func (l *Ledger) KeptPods() int {
	l.lock()
	defer l.unlock()
	return len(l.books.pods)
}

// ForgetPod records that the ShadowPod key ended or is gone.
func (l *Ledger) ForgetPod(key types.NamespacedName) {
	l.record(func() {
		l.books.forgetPod(key)
		delete(l.evicting, key)
	})
}

// forgetPod forgets the pod key, ended; false when it was not running.
func (b *books) forgetPod(key types.NamespacedName) bool {
	old, ok := b.pods[key]
	if !ok {
		return false
	}
	delete(b.pods, key)
	b.podOfUser(old.user, key, false)
	b.chargeUser(old.user, old.charge, -1)
	return true
}

// InUse returns what the running pods of the slice key's Quota users are
// charged; nil when none run.
func (l *Ledger) InUse(key types.NamespacedName) corev1.ResourceList {
	l.lock()
	defer l.unlock()
	if e := l.books.slices[key]; e != nil {
		return e.inUse.DeepCopy()
	}
	return nil
}

// chargeUser adds (sign 1) or removes (sign -1) charge to user's sum and
// recounts the slices whose Quotas name the user.
func (b *books) chargeUser(user string, charge corev1.ResourceList, sign int) {
	u := b.users[user]
	if u == nil {
		u = &userUse{sum: corev1.ResourceList{}}
		b.users[user] = u
	}
	for n, q := range charge {
		if sign > 0 {
			add(u.sum, n, q)
		} else {
			sub(u.sum, n, q)
		}
	}
	b.recountUser(user, u)
}

// recountUser brings the slices of user up to date, and forgets the user
// when nothing refers to it.
func (b *books) recountUser(user string, u *userUse) {
	for key := range u.slices {
		if e := b.slices[key]; e != nil {
			e.inUse = b.inUseOf(e)
			b.recount(key, e)
		}
	}
	if len(u.slices) == 0 && len(u.pods) == 0 && allZero(u.sum) {
		delete(b.users, user)
	}
}

// podOfUser records (in true) or forgets the pod key of user.
func (b *books) podOfUser(user string, key types.NamespacedName, in bool) {
	u := b.users[user]
	if u == nil {
		if !in {
			return
		}
		u = &userUse{sum: corev1.ResourceList{}}
		b.users[user] = u
	}
	if !in {
		delete(u.pods, key)
		return
	}
	if u.pods == nil {
		u.pods = map[types.NamespacedName]bool{}
	}
	u.pods[key] = true
}

// linkUser records that the slice key has a Quota for user.
func (b *books) linkUser(user string, key types.NamespacedName) {
	if user == "" {
		return
	}
	u := b.users[user]
	if u == nil {
		u = &userUse{sum: corev1.ResourceList{}}
		b.users[user] = u
	}
	if u.slices == nil {
		u.slices = map[types.NamespacedName]bool{}
	}
	u.slices[key] = true
	b.syncPodsOf(user)
}

// unlinkUser records that the slice key no longer has a Quota for user.
func (b *books) unlinkUser(user string, key types.NamespacedName) {
	u := b.users[user]
	if u == nil {
		return
	}
	delete(u.slices, key)
	switch {
	case b.podIndex != nil:
		b.syncPodsOf(user)
	case len(u.slices) == 0 && len(u.pods) == 0 && allZero(u.sum):
		delete(b.users, user)
	}
}

// inUseOf is what the running pods of e's Quotas' users are charged, of
// the resources the ledger limits.
func (b *books) inUseOf(e *entry) corev1.ResourceList {
	var out corev1.ResourceList
	for user := range e.users {
		if u := b.users[user]; u != nil && !allZero(u.sum) {
			if out == nil {
				out = corev1.ResourceList{}
			}
			for n, v := range u.sum {
				if _, limited := b.total[n]; limited {
					add(out, n, v)
				}
			}
		}
	}
	return out
}

// OverGrantOf returns what the running pods of the slice key use beyond
// its grant, per resource; nil when they use no more than it was granted.
func (l *Ledger) OverGrantOf(key types.NamespacedName) corev1.ResourceList {
	l.lock()
	defer l.unlock()
	if e := l.books.slices[key]; e != nil {
		return overOf(e)
	}
	return nil
}

// PodCharge is what Liqo's ShadowPod webhook charges a pod: its
// containers' requests summed, or the largest init container's request
// where that is larger, per resource.
func PodCharge(spec *corev1.PodSpec) corev1.ResourceList {
	requests := func(cs []corev1.Container) []corev1.ResourceList {
		out := make([]corev1.ResourceList, len(cs))
		for i := range cs {
			out[i] = cs[i].Resources.Requests
		}
		return out
	}
	return RequestsCharge(requests(spec.Containers), requests(spec.InitContainers))
}

// RequestsCharge is PodCharge from the containers' and the init
// containers' requests alone, for a caller that decoded no PodSpec.
func RequestsCharge(containers, initContainers []corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, requests := range containers {
		for n, q := range requests {
			add(out, n, q)
		}
	}
	for _, requests := range initContainers {
		for n, q := range requests {
			if c, ok := out[n]; !ok || q.Cmp(c) > 0 {
				out[n] = q.DeepCopy()
			}
		}
	}
	return out
}

// InUseTotal returns what the running pods of the slices the ledger counts
// use, summed, for the resources it limits.
func (l *Ledger) InUseTotal() corev1.ResourceList {
	l.lock()
	defer l.unlock()
	return l.books.sumOver(func(e *entry) corev1.ResourceList { return e.inUse })
}

// OverGrant returns, for the resources the ledger limits, how much the
// running pods of its slices use beyond their grants, summed over the
// slices (a provider that turned Liqo's enforcement off lets pods exceed a
// grant; the capacity is taken all the same).
func (l *Ledger) OverGrant() corev1.ResourceList {
	l.lock()
	defer l.unlock()
	return l.books.sumOver(overOf)
}

// sumOver sums of over the slices the books count, for the resources
// the budget limits (zero for each when nothing).
func (b *books) sumOver(of func(*entry) corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, n := range b.names {
		out[n] = resource.Quantity{}
	}
	for _, e := range b.slices {
		if len(e.counted) == 0 {
			continue
		}
		for n, q := range of(e) {
			if _, limited := out[n]; limited {
				add(out, n, q)
			}
		}
	}
	return out
}

func allZero(rl corev1.ResourceList) bool {
	for _, q := range rl {
		if !q.IsZero() {
			return false
		}
	}
	return true
}

// podsOf are the running pods of e's Quotas' users (those inUseOf counts).
func (b *books) podsOf(e *entry) []types.NamespacedName {
	var out []types.NamespacedName
	for user := range e.users {
		if u := b.users[user]; u != nil {
			for pk := range u.pods {
				out = append(out, pk)
			}
		}
	}
	return out
}
