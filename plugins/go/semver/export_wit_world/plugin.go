// Package export_wit_world is `semver`: comparing and sorting semantic versions.
package export_wit_world

import (
	"sort"
	"strconv"
	"strings"

	"wit_component/toolhost"
)

var plugin = toolhost.Plugin{
	Name: "semver", Version: "0.1.0", Description: "Compare and sort semantic versions",
	Tools: []toolhost.Tool{
		{
			Name: "semver_compare", Description: "Compare two semantic versions by SemVer 2.0 precedence.",
			Params: []toolhost.Param{
				{Name: "a", Type: toolhost.String, Description: "a version, e.g. 1.2.3-rc.1", Required: true},
				{Name: "b", Type: toolhost.String, Description: "the version to compare it with", Required: true},
			},
			AgentCallable: true, Tags: []string{"semver"},
			Example:       map[string]any{"a": "1.2.3", "b": "1.10.0-beta.2"},
			Run:           compare,
		},
		{
			Name: "semver_sort", Description: "Sort semantic versions from lowest to highest precedence.",
			Params: []toolhost.Param{
				{Name: "versions", Type: toolhost.JSON, Description: "a JSON array of version strings", Required: true},
			},
			AgentCallable: true, Tags: []string{"semver"},
			Example:       map[string]any{"versions": []string{"1.10.0", "1.2.0", "1.2.0-rc.1"}},
			Run:           sortVersions,
		},
	},
}

func Manifest() toolhost.WitManifest               { return plugin.Manifest() }
func Invoke(tool, args string) toolhost.WitResult { return plugin.Invoke(tool, args) }

type version struct {
	core [3]uint64
	pre  []string
}

func parse(text string) (version, error) {
	var v version
	rest := strings.TrimPrefix(text, "v")
	rest, _, _ = strings.Cut(rest, "+") // build metadata does not count
	rest, pre, hasPre := strings.Cut(rest, "-")
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return v, toolhost.InvalidArgs("`%s` is not MAJOR.MINOR.PATCH", text)
	}
	for i, part := range parts {
		n, err := strconv.ParseUint(part, 10, 64)
		if err != nil || (len(part) > 1 && part[0] == '0') {
			return v, toolhost.InvalidArgs("`%s`: `%s` is not a number without leading zeros", text, part)
		}
		v.core[i] = n
	}
	if hasPre {
		if pre == "" {
			return v, toolhost.InvalidArgs("`%s` has an empty pre-release", text)
		}
		v.pre = strings.Split(pre, ".")
	}
	return v, nil
}

// order is -1, 0 or 1 as a sorts before, with or after b.
func order(a, b version) int {
	for i := range a.core {
		if a.core[i] != b.core[i] {
			return sign(a.core[i] > b.core[i])
		}
	}
	switch {
	case len(a.pre) == 0 && len(b.pre) == 0:
		return 0
	case len(a.pre) == 0:
		return 1 // a release ranks above its pre-releases
	case len(b.pre) == 0:
		return -1
	}
	for i := 0; i < len(a.pre) && i < len(b.pre); i++ {
		x, y := a.pre[i], b.pre[i]
		nx, errX := strconv.ParseUint(x, 10, 64)
		ny, errY := strconv.ParseUint(y, 10, 64)
		switch {
		case errX == nil && errY == nil && nx != ny:
			return sign(nx > ny)
		case errX == nil && errY != nil:
			return -1 // numeric identifiers rank below alphanumeric ones
		case errX != nil && errY == nil:
			return 1
		case errX != nil && x != y:
			return sign(x > y)
		}
	}
	if len(a.pre) == len(b.pre) {
		return 0
	}
	return sign(len(a.pre) > len(b.pre))
}

func sign(greater bool) int {
	if greater {
		return 1
	}
	return -1
}

func compare(args toolhost.Args) (any, error) {
	texts := [2]string{}
	versions := [2]version{}
	for i, name := range []string{"a", "b"} {
		text, err := toolhost.Arg[string](args, name)
		if err != nil {
			return nil, err
		}
		if versions[i], err = parse(text); err != nil {
			return nil, err
		}
		texts[i] = text
	}
	o := order(versions[0], versions[1])
	relation := map[int]string{-1: "a < b", 0: "a == b", 1: "a > b"}[o]
	return map[string]any{"order": o, "relation": relation}, nil
}

func sortVersions(args toolhost.Args) (any, error) {
	texts, err := toolhost.Arg[[]string](args, "versions")
	if err != nil {
		return nil, err
	}
	parsed := make([]version, len(texts))
	for i, text := range texts {
		if parsed[i], err = parse(text); err != nil {
			return nil, err
		}
	}
	index := make([]int, len(texts))
	for i := range index {
		index[i] = i
	}
	sort.SliceStable(index, func(i, j int) bool { return order(parsed[index[i]], parsed[index[j]]) < 0 })
	sorted := make([]string, len(texts))
	for i, at := range index {
		sorted[i] = texts[at]
	}
	return map[string]any{"sorted": sorted}, nil
}
