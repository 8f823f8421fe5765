package flags

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/sliceclass/sliceclass/resourceslice"
)

// Classes returns the names of the classes to serve: --class-name, or the
// names in --classes-file (ReadClassNames), read once.
//
// Deprecated: names alone drop what the file says of each class (its
// priority, sliceBudget, budget or pool, consumer limits): use
// ClassConfigs, which gives each class's whole configuration as
// registration options.
func (v Values) Classes() ([]string, error) {
	if v.ClassesFile == "" {
		return append([]string(nil), v.ClassNames...), nil
	}
	return ReadClassNames(v.ClassesFile)
}

// ReadClassNames reads the class names of a classes file, in either of the
// forms the chart renders (values.yaml's classes, verbatim): a list of
// classes, or an object whose classes field is that list (beside budgets
// and whatever else the manager reads). Each class is an object with a
// name; its other fields (caps, budget, ...) are ignored here, and read
// by ReadClassesConfig, strictly. So "[{name: gold, caps: {cpu: \"4\"}}, {name: silver}]" and
// "{budgets: [], classes: [{name: gold}, {name: silver}]}" both name gold
// and silver.
//
// Every entry needs a name the SDK accepts, each once. An empty list
// ([]) is no class; an empty file is an error (a ConfigMap key gone
// missing, most likely).
func ReadClassNames(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading --classes-file: %w", err)
	}
	names, err := parseClassNames(data)
	if err != nil {
		return nil, fmt.Errorf("--classes-file %s: %w", path, err)
	}
	return names, nil
}

// classEntry is what this package reads of a class in the file.
type classEntry struct {
	Name string `json:"name"`
}

// parseClassNames reads the names of the classes in data.
func parseClassNames(data []byte) ([]string, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errors.New("empty: write [] for no class")
	}
	var entries []classEntry
	if trimmed[0] == '[' || trimmed[0] == '-' {
		if err := yaml.Unmarshal(trimmed, &entries); err != nil {
			return nil, fmt.Errorf("a list of classes: %w", err)
		}
	} else {
		var obj struct {
			Classes *[]classEntry `json:"classes"`
		}
		if err := yaml.Unmarshal(trimmed, &obj); err != nil {
			return nil, fmt.Errorf("an object with a classes list: %w", err)
		}
		if obj.Classes == nil {
			return nil, errors.New("no classes field: want a list of classes, or {classes: [...]}")
		}
		entries = *obj.Classes
	}
	names := make([]string, 0, len(entries))
	seen := map[string]bool{}
	for i, e := range entries {
		if err := resourceslice.ValidateClass(e.Name); err != nil {
			return nil, fmt.Errorf("class %d: %w", i+1, err)
		}
		if seen[e.Name] {
			return nil, fmt.Errorf("class %q listed twice", e.Name)
		}
		seen[e.Name] = true
		names = append(names, e.Name)
	}
	return names, nil
}
