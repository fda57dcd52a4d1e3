package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/agentd/agentd/internal/wire"
)

// agentOnlyArgs are arguments the agent loop adds to every tool's schema and removes before
// running the tool. They are dropped here too, so a caller that forgot is not punished.
var agentOnlyArgs = []string{"summary", "security_risk"}

// ArgsError is returned by DecodeArgs when the model's arguments do not fit the tool. Its
// message is written for the model.
type ArgsError struct {
	Tool     string
	Problems []wire.Problem // located from the arguments object, without wire's "body"
	Provided []string       // the argument names the model gave, sorted
	// Malformed is set when the arguments were not a JSON object at all.
	Malformed bool
}

func (e *ArgsError) Error() string {
	var b strings.Builder
	if e.Malformed {
		fmt.Fprintf(&b, "Invalid arguments for tool %s: they must be one JSON object, such as {\"name\": \"value\"}. Check the quoting and escaping and call the tool again.", e.Tool)
		return b.String()
	}
	fmt.Fprintf(&b, "Invalid arguments for tool %s:", e.Tool)
	for _, p := range e.Problems {
		b.WriteString("\n- ")
		var loc []string
		for _, l := range p.Loc {
			loc = append(loc, fmt.Sprint(l))
		}
		if len(loc) > 0 {
			b.WriteString(strings.Join(loc, "."))
			b.WriteString(": ")
		}
		b.WriteString(strings.TrimPrefix(p.Msg, "Value error, "))
	}
	fmt.Fprintf(&b, "\nArguments provided: [%s]. Check the tool's parameters and call it again.",
		strings.Join(e.Provided, ", "))
	return b.String()
}

// Result is the failed call the model sees.
func (e *ArgsError) Result() Result { return ErrorResult(e.Tool, e.Error()) }

// DecodeArgs decodes the model's arguments for tool name into dst, a pointer to the tool's
// argument struct (*TerminalArgs for "terminal", ...). Before validating it forgives what
// models commonly get wrong and OpenHands forgives too: null values count as absent, a list or
// object sent as a JSON string is parsed, a number or boolean sent as a string is converted,
// and the agent-level "summary" and "security_risk" are ignored. Anything still wrong yields an
// *ArgsError; an unknown tool or a dst of the wrong type is a programming error.
func DecodeArgs(name string, raw json.RawMessage, dst any) error {
	t, ok := Lookup(name)
	if !ok {
		return fmt.Errorf("decode args: unknown tool %q", name)
	}
	return t.DecodeArgs(raw, dst)
}

// DecodeArgs decodes the model's arguments for t into dst, as the package's DecodeArgs does
// for a built-in tool.
func (t Tool) DecodeArgs(raw json.RawMessage, dst any) error {
	name := t.Name
	if reflect.TypeOf(dst) != reflect.PointerTo(t.args) {
		return fmt.Errorf("decode args: tool %s takes %s, not %T", name, t.args, dst)
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return &ArgsError{Tool: name, Malformed: true}
	}
	provided := make([]string, 0, len(obj))
	for k := range obj {
		provided = append(provided, k)
	}
	slices.Sort(provided)
	for _, k := range agentOnlyArgs {
		delete(obj, k)
	}
	repair(obj, t.Parameters())
	clean, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("decode args %s: %w", name, err)
	}
	err = wire.DecodeJSON(clean, dst)
	var invalid *wire.Error
	if errors.As(err, &invalid) {
		ae := &ArgsError{Tool: name, Provided: provided}
		for _, p := range invalid.Problems {
			if len(p.Loc) > 0 && p.Loc[0] == "body" {
				p.Loc = p.Loc[1:]
			}
			ae.Problems = append(ae.Problems, p)
		}
		return ae
	}
	return err
}

// repair fixes, in place, the values of obj whose JSON type is not the schema's but whose
// meaning is clear, and removes null values.
func repair(obj map[string]any, schema map[string]any) {
	props, _ := schema["properties"].(map[string]any)
	for k, v := range obj {
		if v == nil {
			delete(obj, k)
			continue
		}
		if ps, ok := props[k].(map[string]any); ok {
			obj[k] = repairValue(v, ps)
		}
	}
}

func repairValue(v any, schema map[string]any) any {
	typ, _ := schema["type"].(string)
	if s, ok := v.(string); ok {
		t := strings.TrimSpace(s)
		switch typ {
		case "array", "object":
			var parsed any
			dec := json.NewDecoder(strings.NewReader(t))
			dec.UseNumber()
			if dec.Decode(&parsed) == nil && !dec.More() {
				if _, isArr := parsed.([]any); isArr == (typ == "array") {
					v = parsed
				}
				if _, isObj := parsed.(map[string]any); isObj && typ == "object" {
					v = parsed
				}
			}
		case "integer":
			if _, err := strconv.ParseInt(t, 10, 64); err == nil {
				return json.Number(t)
			}
		case "number":
			if _, err := strconv.ParseFloat(t, 64); err == nil && json.Valid([]byte(t)) {
				return json.Number(t)
			}
		case "boolean":
			if b, err := strconv.ParseBool(t); err == nil {
				return b
			}
		}
	}
	switch x := v.(type) {
	case []any:
		if items, ok := schema["items"].(map[string]any); ok {
			for i := range x {
				x[i] = repairValue(x[i], items)
			}
		}
	case map[string]any:
		repair(x, schema)
	}
	return v
}
