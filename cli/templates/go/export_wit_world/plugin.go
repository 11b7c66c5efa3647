// Package export_wit_world is `{{name}}`, a toolhost tool plugin.
package export_wit_world

import (
	"strings"

	"wit_component/toolhost"
)

var plugin = toolhost.Plugin{
	Name: "{{name}}", Version: "0.1.0", Description: "Count words in text",
	Tools: []toolhost.Tool{{
		Name: "{{name}}", Description: "Count the words in a text", AgentCallable: true,
		Params:  []toolhost.Param{{Name: "text", Type: toolhost.String, Description: "the text to count", Required: true}},
		Example: map[string]any{"text": "one two three"},
		Run: func(args toolhost.Args) (any, error) {
			text, err := toolhost.Arg[string](args, "text")
			if err != nil {
				return nil, err
			}
			return map[string]int{"words": len(strings.Fields(text))}, nil
		},
	}},
}

func Manifest() toolhost.WitManifest               { return plugin.Manifest() }
func Invoke(tool, args string) toolhost.WitResult { return plugin.Invoke(tool, args) }
