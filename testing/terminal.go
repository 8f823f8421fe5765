package slicetest

import (
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func isTerminal(err error) bool {
	return errors.Is(err, reconcile.TerminalError(nil))
}
