package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
)

// state is one decode run: the location of the value being walked and the
// problems found so far. The location is a stack reused by the whole walk;
// problems copy it.
type state struct {
	loc      []any
	problems []Problem
}

func (s *state) add(base []any, typ, msg string, extra ...any) {
	s.problems = append(s.problems, Problem{Type: typ, Loc: join(base, extra), Msg: msg})
}

func (s *state) push(x any) { s.loc = append(s.loc, x) }
func (s *state) pop()       { s.loc = s.loc[:len(s.loc)-1] }

func (s *state) err() error {
	if len(s.problems) == 0 {
		return nil
	}
	return &Error{Problems: s.problems}
}

// DecodeJSON decodes a request body into dst, a non-nil pointer, collecting
// every problem with a location starting at "body". It returns an *Error
// when the input is invalid; any other error means dst was not a pointer.
func DecodeJSON(data []byte, dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return errors.New("wire: DecodeJSON needs a non-nil pointer")
	}
	ev := rv.Elem()
	ti := infoOf(ev.Type())
	s := &state{loc: make([]any, 1, 16)}
	s.loc[0] = "body"
	// FastAPI treats an empty body, and a JSON null, as a missing body.
	if len(data) == 0 {
		s.add(s.loc, "missing", msgMissing)
		return s.err()
	}
	v, off, ok := parseJSON(data)
	if !ok {
		s.add(s.loc, "json_invalid", msgJSONInvalid, off)
		return s.err()
	}
	if v == nil && !ti.unmarshaler && ti.kind != kindPtr && ti.kind != kindAny && ti.kind != kindRaw {
		s.add(s.loc, "missing", msgMissing)
		return s.err()
	}
	s.decode(v, ev, ti, noOpts, false)
	return s.err()
}

// parseJSON parses data into a generic tree, keeping numbers as json.Number
// so that integers survive exactly. On failure it returns the byte offset of
// the offending character, as Python's json module reports it.
func parseJSON(data []byte) (v any, off int, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			// encoding/json counts the offending byte as read.
			return nil, max(int(se.Offset)-1, 0), false
		}
		return nil, len(data), false // truncated, or only whitespace
	}
	end := int(dec.InputOffset())
	for i, c := range data[end:] {
		switch c {
		case ' ', '\t', '\n', '\r':
		default:
			return nil, end + i, false
		}
	}
	return v, 0, true
}

// decode walks the generic value v into rv (addressable) by its type's rules,
// then runs the type's validator if nothing below it failed. skipHook is set
// by Decoder.Decode so a type can decode into itself from its DecodeWire; its
// validator then runs once, after DecodeWire returns.
func (s *state) decode(v any, rv reflect.Value, ti *typeInfo, o *opts, skipHook bool) {
	n := len(s.problems)
	if ti.unmarshaler && !skipHook {
		d := &Decoder{s: s, loc: join(s.loc, nil)}
		rv.Addr().Interface().(Unmarshaler).DecodeWire(v, d)
	} else {
		s.decodeValue(v, rv, ti, o)
	}
	if ti.validates && len(s.problems) == n && !(skipHook && ti.unmarshaler) {
		c := &Checker{s: s, loc: join(s.loc, nil)}
		rv.Addr().Interface().(Validator).ValidateWire(c)
	}
}

func (s *state) decodeValue(v any, rv reflect.Value, ti *typeInfo, o *opts) {
	if v == nil {
		switch ti.kind {
		case kindPtr, kindAny, kindRaw, kindSlice, kindBytes, kindMap:
			rv.SetZero()
			return
		}
	}
	switch ti.kind {
	case kindPtr:
		if rv.IsNil() {
			rv.Set(reflect.New(ti.t.Elem()))
		}
		s.decode(v, rv.Elem(), infoOf(ti.t.Elem()), o, false)
	case kindAny:
		rv.Set(reflect.ValueOf(v))
	case kindRaw:
		if b, ok := s.reencode(v); ok {
			rv.SetBytes(b)
		}
	case kindString:
		str, ok := v.(string)
		if !ok {
			s.add(s.loc, "string_type", msgString)
			return
		}
		rv.SetString(str)
		s.checkStrLen(str, o)
	case kindEnum:
		str, ok := v.(string)
		if _, known := ti.enumSet[str]; !ok || !known {
			s.add(s.loc, "enum", ti.enumMsg)
			return
		}
		rv.SetString(str)
		s.checkStrLen(str, o)
	case kindBool:
		b, ok := v.(bool)
		if !ok {
			s.add(s.loc, "bool_type", msgBool)
			return
		}
		rv.SetBool(b)
	case kindInt, kindUint:
		lit, ok := v.(json.Number)
		if !ok {
			s.add(s.loc, "int_type", msgInt)
			return
		}
		s.setInt(string(lit), rv, true, o)
	case kindFloat:
		lit, ok := v.(json.Number)
		if !ok {
			s.add(s.loc, "float_type", msgFloat)
			return
		}
		s.setFloat(string(lit), rv, o)
	case kindNumber:
		lit, ok := v.(json.Number)
		if !ok {
			s.add(s.loc, "float_type", msgFloat)
			return
		}
		rv.SetString(string(lit))
	case kindTime:
		str, ok := v.(string)
		if !ok {
			s.add(s.loc, "datetime_type", msgDatetime)
			return
		}
		s.setTime(str, rv)
	case kindBytes:
		str, ok := v.(string)
		if !ok {
			s.add(s.loc, "bytes_type", "Input should be a valid bytes")
			return
		}
		b, err := base64.StdEncoding.DecodeString(str)
		if err != nil {
			s.add(s.loc, "base64_decode", "Base64 decoding error")
			return
		}
		rv.SetBytes(b)
	case kindSlice:
		s.decodeSlice(v, rv, ti, o)
	case kindArray:
		s.decodeArray(v, rv, ti)
	case kindMap:
		s.decodeMap(v, rv, ti, o)
	case kindStruct:
		s.decodeStruct(v, rv, ti)
	case kindJSONUnmarshaler:
		b, ok := s.reencode(v)
		if ok && rv.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(b) != nil {
			// The unmarshaler's error text may quote the input; don't pass it on.
			s.add(s.loc, "value_error", "Value error, invalid "+typeWord(ti.t))
		}
	case kindTextUnmarshaler:
		str, ok := v.(string)
		if !ok {
			s.add(s.loc, "string_type", msgString)
			return
		}
		if rv.Addr().Interface().(interface{ UnmarshalText([]byte) error }).UnmarshalText([]byte(str)) != nil {
			s.add(s.loc, "value_error", "Value error, invalid "+typeWord(ti.t))
		}
	default:
		panic("wire: cannot decode into " + ti.t.String())
	}
}

func (s *state) decodeStruct(v any, rv reflect.Value, ti *typeInfo) {
	obj, ok := v.(map[string]any)
	if !ok {
		s.add(s.loc, "model_attributes_type", msgModel)
		return
	}
	matched := 0
	for _, f := range ti.fields {
		fv, present := obj[f.name]
		if !present {
			if f.o.required {
				s.add(s.loc, "missing", msgMissing, f.nameAny)
			} else if f.def.IsValid() {
				setDefault(fieldValue(rv, f.index), f.def)
			}
			continue
		}
		matched++
		s.push(f.nameAny)
		s.decode(fv, fieldValue(rv, f.index), infoOf(f.t), f.o, false)
		s.pop()
	}
	if ti.strict && matched < len(obj) {
		// Extras come after the field problems, as in pydantic; sorted because
		// the generic tree lost the input order.
		var extra []string
		for k := range obj {
			if _, known := ti.byName[k]; !known {
				extra = append(extra, k)
			}
		}
		slices.Sort(extra)
		for _, k := range extra {
			s.add(s.loc, "extra_forbidden", msgExtra, k)
		}
	}
}

func (s *state) decodeSlice(v any, rv reflect.Value, ti *typeInfo, o *opts) {
	arr, ok := v.([]any)
	if !ok {
		s.add(s.loc, "list_type", msgList)
		return
	}
	eti := infoOf(ti.t.Elem())
	sl := reflect.MakeSlice(ti.t, len(arr), len(arr))
	for i, x := range arr {
		s.push(i)
		s.decode(x, sl.Index(i), eti, noOpts, false)
		s.pop()
	}
	rv.Set(sl)
	s.checkItems("List", len(arr), o)
}

// decodeArray fills a fixed-size Go array, which pydantic would model as a
// tuple of exactly that many items.
func (s *state) decodeArray(v any, rv reflect.Value, ti *typeInfo) {
	arr, ok := v.([]any)
	if !ok {
		s.add(s.loc, "list_type", msgList)
		return
	}
	n := ti.t.Len()
	eti := infoOf(ti.t.Elem())
	rv.SetZero()
	for i, x := range arr[:min(n, len(arr))] {
		s.push(i)
		s.decode(x, rv.Index(i), eti, noOpts, false)
		s.pop()
	}
	s.checkItems("List", len(arr), &opts{minLen: n, maxLen: n})
}

func (s *state) decodeMap(v any, rv reflect.Value, ti *typeInfo, o *opts) {
	obj, ok := v.(map[string]any)
	if !ok {
		s.add(s.loc, "dict_type", msgDict)
		return
	}
	if rv.IsNil() {
		rv.Set(reflect.MakeMapWithSize(ti.t, len(obj)))
	}
	kt, et := ti.t.Key(), ti.t.Elem()
	kti, eti := infoOf(kt), infoOf(et)
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys) // deterministic problem order
	for _, k := range keys {
		s.push(k)
		n := len(s.problems)
		kv := s.mapKey(k, kt, kti)
		ev := reflect.New(et).Elem()
		s.decode(obj[k], ev, eti, noOpts, false)
		if len(s.problems) == n {
			rv.SetMapIndex(kv, ev)
		}
		s.pop()
	}
	s.checkItems("Dictionary", len(obj), o)
}

// mapKey converts a JSON object key to the map's key type. Key problems are
// located at [..., key, "[key]"], where pydantic puts them.
func (s *state) mapKey(k string, kt reflect.Type, kti *typeInfo) reflect.Value {
	kv := reflect.New(kt).Elem()
	s.push("[key]")
	switch kti.kind {
	case kindEnum:
		if _, ok := kti.enumSet[k]; !ok {
			s.add(s.loc, "enum", kti.enumMsg)
		}
		kv.SetString(k)
	case kindInt, kindUint:
		s.setInt(k, kv, false, noOpts)
	default:
		kv.SetString(k)
	}
	s.pop()
	return kv
}

// reencode turns a generic value back into JSON for json.RawMessage fields
// and json.Unmarshaler types. HTML escaping is off so the text stays as the
// client sent it; object keys come out sorted.
func (s *state) reencode(v any) ([]byte, bool) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		s.add(s.loc, "value_error", "Value error, value cannot be encoded as JSON")
		return nil, false
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), true
}

// setDefault stores a parsed default, allocating through pointer fields.
func setDefault(v reflect.Value, def reflect.Value) {
	for v.Kind() == reflect.Pointer {
		p := reflect.New(v.Type().Elem())
		v.Set(p)
		v = p.Elem()
	}
	v.Set(def)
}

// typeWord names a type in messages without its package path.
func typeWord(t reflect.Type) string {
	if t.Name() != "" {
		return t.Name()
	}
	return t.String()
}
