package apiserver

import "errors"

// restart is set by package testing/controlplane (SetRestart, from its
// init): the control plane's processes are its own.
var restart func(controlPlane any) error

// SetRestart is how package testing/controlplane gives Restart its way to
// restart a control plane's kube-apiserver. Only it calls SetRestart.
func SetRestart(f func(controlPlane any) error) { restart = f }

// Restart stops the kube-apiserver of controlPlane (a
// *controlplane.ControlPlane) and starts it again over the same etcd,
// address and certificates: what a controller sees when its API server is
// upgraded or crashes. Clients built from the control plane's Config, and
// from AddUser, work again once it is back; the objects are kept, the
// request counters of RequestCount start from zero. It returns when the
// new server is healthy. The stop waits at most 2 seconds for open
// watches; a kube-apiserver too old to have
// --shutdown-watch-termination-grace-period waits until envtest's stop
// timeout (a minute) and Restart returns an error.
func Restart(controlPlane any) error {
	if restart == nil {
		return errors.New("apiserver: no control plane package linked (import testing/controlplane)")
	}
	return restart(controlPlane)
}
