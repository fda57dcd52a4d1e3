package wire

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"
)

// kind is how a Go type is decoded and described, decided once per type.
type kind uint8

const (
	kindInvalid kind = iota
	kindString
	kindEnum
	kindBool
	kindInt
	kindUint
	kindFloat
	kindTime
	kindRaw    // json.RawMessage
	kindNumber // json.Number
	kindAny    // empty interface
	kindPtr
	kindSlice
	kindBytes // []byte, base64 like encoding/json
	kindArray
	kindMap
	kindStruct
	kindJSONUnmarshaler
	kindTextUnmarshaler
)

var (
	timeType   = reflect.TypeFor[time.Time]()
	rawType    = reflect.TypeFor[json.RawMessage]()
	numberType = reflect.TypeFor[json.Number]()
	jsonUnType = reflect.TypeFor[json.Unmarshaler]()
	textUnType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// typeInfo is everything the walk needs to know about a type. Element and
// field types are looked up through infoOf when needed rather than linked
// here, so recursive types need no special care.
type typeInfo struct {
	t           reflect.Type
	kind        kind
	unmarshaler bool // *T implements Unmarshaler
	validates   bool // *T implements Validator
	strict      bool

	enum    []string
	enumSet map[string]struct{}
	enumMsg string

	fields []*field // structs: flattened like encoding/json, in declaration order
	byName map[string]*field
}

// field is one JSON key of a struct, possibly promoted from an embedded one.
type field struct {
	name    string
	nameAny any // boxed once so pushing it on the location stack is free
	goName  string
	index   []int
	t       reflect.Type
	o       *opts
	doc     string
	def     reflect.Value // parsed default= of the dereferenced type
}

var infos sync.Map // reflect.Type -> *typeInfo

// infoOf returns the cached info for t, building it on first use. Malformed
// tags panic here: they are programming errors, and the first test that
// touches the type finds them.
func infoOf(t reflect.Type) *typeInfo {
	if v, ok := infos.Load(t); ok {
		return v.(*typeInfo)
	}
	ti, err := buildInfo(t)
	if err != nil {
		panic("wire: " + t.String() + ": " + err.Error())
	}
	v, _ := infos.LoadOrStore(t, ti)
	return v.(*typeInfo)
}

func buildInfo(t reflect.Type) (*typeInfo, error) {
	ti := &typeInfo{t: t, kind: classify(t)}
	if t.Kind() != reflect.Interface && t.Kind() != reflect.Pointer {
		pt := reflect.PointerTo(t)
		ti.unmarshaler = pt.Implements(unmarshalerType)
		ti.validates = pt.Implements(validatorType)
	}
	switch ti.kind {
	case kindEnum:
		ti.enum = reflect.Zero(t).Interface().(Enum).EnumValues()
		ti.enumSet = make(map[string]struct{}, len(ti.enum))
		for _, v := range ti.enum {
			ti.enumSet[v] = struct{}{}
		}
		ti.enumMsg = msgEnum(ti.enum)
	case kindStruct:
		ti.strict = reflect.PointerTo(t).Implements(strictType)
		fields, err := structFields(t)
		if err != nil {
			return nil, err
		}
		ti.fields = fields
		ti.byName = make(map[string]*field, len(fields))
		for _, f := range fields {
			ti.byName[f.name] = f
		}
	case kindMap:
		switch classify(t.Key()) {
		case kindString, kindEnum, kindInt, kindUint:
		default:
			return nil, fmt.Errorf("map key type %s is not a string or integer", t.Key())
		}
	}
	return ti, nil
}

// classify picks the decoding strategy. Order matters: named types with
// their own behaviour win over their underlying kind, as in encoding/json.
func classify(t reflect.Type) kind {
	switch t {
	case timeType:
		return kindTime
	case rawType:
		return kindRaw
	case numberType:
		return kindNumber
	}
	if t.Kind() == reflect.String && t.Implements(enumType) {
		return kindEnum
	}
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
		pt := reflect.PointerTo(t)
		if pt.Implements(jsonUnType) {
			return kindJSONUnmarshaler
		}
		if pt.Implements(textUnType) {
			return kindTextUnmarshaler
		}
	}
	switch t.Kind() {
	case reflect.String:
		return kindString
	case reflect.Bool:
		return kindBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return kindInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return kindUint
	case reflect.Float32, reflect.Float64:
		return kindFloat
	case reflect.Pointer:
		return kindPtr
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && classify(t.Elem()) == kindUint {
			return kindBytes
		}
		return kindSlice
	case reflect.Array:
		return kindArray
	case reflect.Map:
		return kindMap
	case reflect.Struct:
		return kindStruct
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return kindAny
		}
	}
	return kindInvalid
}

// structFields flattens t's fields with encoding/json's rules: embedded
// structs without a json name promote their fields, a shallower field hides
// a deeper one, and of two at the same depth a tagged one wins, else both go.
func structFields(t reflect.Type) ([]*field, error) {
	type cand struct {
		f      *field
		depth  int
		tagged bool
	}
	type level struct {
		t     reflect.Type
		index []int
	}
	var cands []cand
	seen := map[reflect.Type]bool{}
	current := []level{{t: t}}
	for depth := 0; len(current) > 0; depth++ {
		var next []level
		for _, lv := range current {
			if seen[lv.t] {
				continue
			}
			seen[lv.t] = true
			for i := 0; i < lv.t.NumField(); i++ {
				sf := lv.t.Field(i)
				ft := sf.Type
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, _, _ := strings.Cut(tag, ",")
				index := append(append(make([]int, 0, len(lv.index)+1), lv.index...), i)
				if name == "" && sf.Anonymous {
					// Only embedded structs promote fields. An unexported
					// embedded pointer is skipped: reflection cannot
					// allocate it.
					if ft.Kind() == reflect.Struct || (ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct && sf.IsExported()) {
						next = append(next, level{t: deref(ft), index: index})
						continue
					}
				}
				if !sf.IsExported() {
					continue
				}
				o, err := parseWireTag(sf.Tag.Get("wire"))
				if err != nil {
					return nil, fmt.Errorf("field %s: %w", sf.Name, err)
				}
				tagged := name != ""
				if !tagged {
					name = sf.Name
				}
				f := &field{name: name, nameAny: name, goName: sf.Name, index: index, t: ft, o: o, doc: sf.Tag.Get("doc")}
				if o.hasDefault {
					if f.def, err = parseDefault(ft, o.defaultText); err != nil {
						return nil, fmt.Errorf("field %s: %w", sf.Name, err)
					}
				}
				cands = append(cands, cand{f: f, depth: depth, tagged: tagged})
			}
		}
		current = next
	}

	byName := map[string][]cand{}
	for _, c := range cands {
		byName[c.f.name] = append(byName[c.f.name], c)
	}
	var out []*field
	for _, cs := range byName {
		best := cs[0].depth
		for _, c := range cs {
			best = min(best, c.depth)
		}
		var top []cand
		for _, c := range cs {
			if c.depth == best {
				top = append(top, c)
			}
		}
		if len(top) > 1 {
			var tagged []cand
			for _, c := range top {
				if c.tagged {
					tagged = append(tagged, c)
				}
			}
			top = tagged
		}
		if len(top) == 1 {
			out = append(out, top[0].f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return lessIndex(out[i].index, out[j].index) })
	return out, nil
}

func lessIndex(a, b []int) bool {
	for k := range min(len(a), len(b)) {
		if a[k] != b[k] {
			return a[k] < b[k]
		}
	}
	return len(a) < len(b)
}

// fieldValue returns the field at index, allocating nil embedded pointers on
// the way, as encoding/json does when it sets a promoted field.
func fieldValue(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

// deref strips pointers: constraints, defaults and schemas of *T are T's.
func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
