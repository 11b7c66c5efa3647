// Package toolhost writes a toolhost tool plugin in Go: a Plugin value
// with its tools, and the two exports that wit-bindgen's `export_wit_world`
// package must define handed to it:
//
//	var plugin = toolhost.Plugin{
//		Name: "wordcount", Version: "0.1.0", Description: "Count words in text",
//		Tools: []toolhost.Tool{{
//			Name: "count", Description: "Count the words in a text", AgentCallable: true,
//			Params: []toolhost.Param{{Name: "text", Type: toolhost.String, Description: "the text to count", Required: true}},
//			Run: func(args toolhost.Args) (any, error) {
//				text, err := toolhost.Arg[string](args, "text")
//				if err != nil {
//					return nil, err
//				}
//				return map[string]int{"words": len(strings.Fields(text))}, nil
//			},
//		}},
//	}
//
//	func Manifest() toolhost.WitManifest                 { return plugin.Manifest() }
//	func Invoke(tool, args string) toolhost.WitResult   { return plugin.Invoke(tool, args) }
//
// A tool returns a string (text) or anything encoding/json marshals (JSON),
// or an error: InvalidArgs and Failed say which kind; any other error fails
// the call with its message. Every call runs in a fresh instance, so no
// package state survives between calls.
package toolhost

import (
	"bytes"
	"encoding/json"
	"fmt"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
	types "wit_component/toolhost_plugin_types"
)

// APIVersion is the toolhost plugin API these helpers are written against.
const APIVersion = "0.1.0"

// WitManifest is what the `Manifest` export returns.
type WitManifest = types.Manifest

// WitResult is what the `Invoke` export returns.
type WitResult = witTypes.Result[types.Output, types.ToolError]

// Type is the JSON type a parameter's value must have.
type Type = types.ParamType

// The parameter types.
const (
	String  Type = types.ParamType_String
	Integer Type = types.ParamType_Integer
	Number  Type = types.ParamType_Number
	Boolean Type = types.ParamType_Boolean
	JSON    Type = types.ParamType_Json
)

// Permission is how much care a call needs before it runs.
type Permission = types.Permission

// The permission levels.
const (
	Public    Permission = types.Permission_Public
	Moderate  Permission = types.Permission_Moderate
	Sensitive Permission = types.Permission_Sensitive
)

// Param is one parameter of a tool.
type Param struct {
	Name        string
	Type        Type
	Description string
	Required    bool
}

// Args holds a call's arguments, by name, as JSON.
type Args map[string]json.RawMessage

// Tool is one tool: its declaration and the function that runs it.
type Tool struct {
	Name               string
	Description        string
	Params             []Param
	Permission         Permission
	AgentCallable      bool
	ResultApproval     bool
	DistributedExposed bool
	Tags               []string
	// Example holds an example call's arguments, or nil.
	Example map[string]any
	Run     func(Args) (any, error)
}

// Plugin is what the plugin declares: its tools and what it asks for.
type Plugin struct {
	Name        string
	Version     string
	Description string
	Tools       []Tool
	// Directories maps a guest path to the access asked for.
	Directories map[string]types.DirAccess
	Env         []string
	HTTPHosts   []string
}

// ToolError is a failure of a kind the host tells apart.
type ToolError struct {
	invalidArgs bool
	message     string
}

func (e *ToolError) Error() string { return e.message }

// InvalidArgs reports arguments that were wrong; the message tells the
// model what to send instead.
func InvalidArgs(format string, a ...any) error {
	return &ToolError{invalidArgs: true, message: fmt.Sprintf(format, a...)}
}

// Failed reports a tool that ran and failed.
func Failed(format string, a ...any) error {
	return &ToolError{message: fmt.Sprintf(format, a...)}
}

// Arg is the argument `name` as a T; an error naming it when it is
// missing or not a T.
func Arg[T any](args Args, name string) (T, error) {
	var value T
	raw, ok := args[name]
	if !ok || string(raw) == "null" {
		return value, InvalidArgs("missing required argument `%s`", name)
	}
	if err := json.Unmarshal(raw, &value); err != nil {
		return value, InvalidArgs("argument `%s` must be %T: %v", name, value, err)
	}
	return value, nil
}

// ArgOr is the argument `name` as a T, or `fallback` when it is absent.
func ArgOr[T any](args Args, name string, fallback T) (T, error) {
	if raw, ok := args[name]; !ok || string(raw) == "null" {
		return fallback, nil
	}
	return Arg[T](args, name)
}

// Manifest is the plugin's declaration, as the `Manifest` export returns it.
func (p *Plugin) Manifest() WitManifest {
	tools := make([]types.Tool, 0, len(p.Tools))
	for _, t := range p.Tools {
		params := make([]types.Param, 0, len(t.Params))
		for _, param := range t.Params {
			params = append(params, types.Param{Name: param.Name, Type: param.Type, Description: param.Description, Required: param.Required})
		}
		example := witTypes.None[string]()
		if t.Example != nil {
			text, err := json.Marshal(t.Example)
			if err != nil {
				panic(fmt.Sprintf("the example of tool %s is not JSON: %v", t.Name, err))
			}
			example = witTypes.Some(string(text))
		}
		tools = append(tools, types.Tool{
			Name: t.Name, Description: t.Description, Params: params, Permission: t.Permission,
			ResultApproval: t.ResultApproval, AgentCallable: t.AgentCallable, DistributedExposed: t.DistributedExposed,
			Tags: nonNil(t.Tags), Example: example,
		})
	}
	dirs := []types.DirRequest{}
	for path, access := range p.Directories {
		dirs = append(dirs, types.DirRequest{GuestPath: path, Access: access})
	}
	return WitManifest{
		Name: p.Name, Version: p.Version, Description: p.Description, ApiVersion: APIVersion, Tools: tools,
		Capabilities: types.Capabilities{Directories: dirs, Env: nonNil(p.Env), HttpHosts: nonNil(p.HTTPHosts)},
	}
}

// Invoke runs the tool named `name`, as the `Invoke` export does.
func (p *Plugin) Invoke(name, argsJSON string) WitResult {
	for _, t := range p.Tools {
		if t.Name != name {
			continue
		}
		var args Args
		if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
			return fail(InvalidArgs("the arguments must be a JSON object: %v", err))
		}
		output, err := t.Run(args)
		if err != nil {
			return fail(err)
		}
		if text, ok := output.(string); ok {
			return witTypes.Ok[types.Output, types.ToolError](types.MakeOutputText(text))
		}
		// Not json.Marshal: it writes <, > and & as \u escapes, for HTML.
		var encoded bytes.Buffer
		encoder := json.NewEncoder(&encoded)
		encoder.SetEscapeHTML(false)
		if err := encoder.Encode(output); err != nil {
			return fail(Failed("the result is not JSON: %v", err))
		}
		return witTypes.Ok[types.Output, types.ToolError](types.MakeOutputJson(string(bytes.TrimRight(encoded.Bytes(), "\n"))))
	}
	return witTypes.Err[types.Output](types.MakeToolErrorUnknownTool(fmt.Sprintf("no tool named `%s`", name)))
}

func fail(err error) WitResult {
	if e, ok := err.(*ToolError); ok && e.invalidArgs {
		return witTypes.Err[types.Output](types.MakeToolErrorInvalidArgs(e.message))
	}
	return witTypes.Err[types.Output](types.MakeToolErrorFailed(err.Error()))
}

func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}
