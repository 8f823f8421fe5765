package resourceslice

// controllerName is the name of the controller serving class:
// "resourceslice-<class>". It names the controller's metrics, logs and
// events.
func controllerName(class string) string {
	return "resourceslice-" + class
}
