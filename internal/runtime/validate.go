package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// decodeCommandRequest parses and validates a POST /api/command body. It reports every problem
// at once, as FastAPI does, and rejects fields it does not know.
func decodeCommandRequest(data []byte) (CommandRequest, []ValidationError) {
	var req CommandRequest
	data = bytes.TrimSpace(data)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		return req, []ValidationError{{Type: "missing", Loc: []any{"body"}, Msg: "Field required"}}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return req, []ValidationError{{Type: "json_invalid", Loc: []any{"body", int(syntax.Offset)}, Msg: "JSON decode error"}}
		}
		return req, []ValidationError{{
			Type: "model_attributes_type", Loc: []any{"body"},
			Msg: "Input should be a valid dictionary or object to extract fields from",
		}}
	}

	var errs []ValidationError
	add := func(typ, msg string, loc ...any) {
		errs = append(errs, ValidationError{Type: typ, Loc: append([]any{"body"}, loc...), Msg: msg})
	}

	if raw, ok := fields["command"]; !ok {
		add("missing", "Field required", "command")
	} else if s, ok := jsonString(raw); !ok {
		add("string_type", "Input should be a valid string", "command")
	} else if s == "" {
		add("string_too_short", "String should have at least 1 character", "command")
	} else if strings.ContainsRune(s, 0) {
		add("value_error", "Value error, command must not contain NUL bytes", "command")
	} else {
		req.Command = s
	}

	if raw, ok := fields["cwd"]; ok && !isNull(raw) {
		if s, ok := jsonString(raw); !ok {
			add("string_type", "Input should be a valid string", "cwd")
		} else if strings.ContainsRune(s, 0) {
			add("value_error", "Value error, cwd must not contain NUL bytes", "cwd")
		} else {
			req.Cwd = s
		}
	}

	req.TimeoutSeconds = DefaultCommandTimeoutSeconds
	if raw, ok := fields["timeout_seconds"]; ok {
		n, typ, msg := jsonInt(raw)
		switch {
		case typ != "":
			add(typ, msg, "timeout_seconds")
		case n < 1:
			add("greater_than_equal", "Input should be greater than or equal to 1", "timeout_seconds")
		case n > MaxCommandTimeoutSeconds:
			add("less_than_equal", "Input should be less than or equal to "+strconv.Itoa(MaxCommandTimeoutSeconds), "timeout_seconds")
		default:
			req.TimeoutSeconds = int(n)
		}
	}

	if raw, ok := fields["env"]; ok && !isNull(raw) {
		var env map[string]json.RawMessage
		if raw[0] != '{' || json.Unmarshal(raw, &env) != nil {
			add("dict_type", "Input should be a valid dictionary", "env")
		} else {
			req.Env = make(map[string]string, len(env))
			for _, k := range sortedKeys(env) {
				v, ok := jsonString(env[k])
				switch {
				case k == "" || strings.ContainsAny(k, "=\x00"):
					add("value_error", "Value error, an environment variable name must be non-empty and contain no '=' or NUL", "env", k)
				case !ok:
					add("string_type", "Input should be a valid string", "env", k)
				case strings.ContainsRune(v, 0):
					add("value_error", "Value error, an environment value must not contain NUL bytes", "env", k)
				default:
					req.Env[k] = v
				}
			}
		}
	}

	for _, k := range sortedKeys(fields) {
		switch k {
		case "command", "cwd", "timeout_seconds", "env":
		default:
			add("extra_forbidden", "Extra inputs are not permitted", k)
		}
	}
	return req, errs
}

// checkCwd resolves req.Cwd against the workspace and checks that it is a directory.
func (s *Server) checkCwd(req *CommandRequest) []ValidationError {
	dir := s.cfg.Workspace
	if req.Cwd != "" {
		dir = req.Cwd
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(s.cfg.Workspace, dir)
		}
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return []ValidationError{{
			Type: "value_error", Loc: []any{"body", "cwd"},
			Msg: "Value error, not a directory: " + dir,
		}}
	}
	req.Cwd = filepath.Clean(dir)
	return nil
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(raw, []byte("null")) }

// jsonString decodes raw if it is a JSON string. (json.Unmarshal would accept null.)
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// jsonInt decodes raw if it is a JSON number with no fractional part. On failure it returns
// the FastAPI error type and message.
func jsonInt(raw json.RawMessage) (int64, string, string) {
	const notInt = "Input should be a valid integer"
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, "int_type", notInt
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, "", ""
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange):
		return 0, "int_type", notInt
	case math.IsInf(f, 0) || math.Abs(f) > 1<<53:
		return 0, "int_parsing_size", "Unable to parse input string as an integer, exceeded maximum size"
	case f != math.Trunc(f):
		return 0, "int_from_float", notInt + ", got a number with a fractional part"
	}
	return int64(f), "", ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
