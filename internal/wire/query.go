package wire

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"sync"
)

// queryShape is how a query field holds its value(s).
type queryShape uint8

const (
	shapeScalar queryShape = iota
	shapePtr               // absent stays nil, so handlers can tell "not given"
	shapeSlice             // one item per repetition of the parameter
)

type queryField struct {
	name    string
	nameAny any
	index   []int
	t       reflect.Type // the field's type
	elem    reflect.Type // the scalar type one value parses into
	shape   queryShape
	o       *opts
	doc     string
	def     reflect.Value
}

type queryInfo struct {
	fields    []*queryField
	validates bool
}

var queryInfos sync.Map // reflect.Type -> *queryInfo

func queryInfoOf(t reflect.Type) *queryInfo {
	if v, ok := queryInfos.Load(t); ok {
		return v.(*queryInfo)
	}
	qi := &queryInfo{validates: reflect.PointerTo(t).Implements(validatorType)}
	if err := collectQueryFields(t, nil, &qi.fields); err != nil {
		panic("wire: " + t.String() + ": " + err.Error())
	}
	seen := map[string]bool{}
	for _, f := range qi.fields {
		if seen[f.name] {
			panic("wire: " + t.String() + ": query parameter " + f.name + " appears twice")
		}
		seen[f.name] = true
	}
	v, _ := queryInfos.LoadOrStore(t, qi)
	return v.(*queryInfo)
}

// collectQueryFields gathers fields tagged query:"name" in declaration
// order. Untagged embedded structs are flattened so that shared parameter
// sets (paging, filters) can be embedded.
func collectQueryFields(t reflect.Type, index []int, out *[]*queryField) error {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		idx := append(append(make([]int, 0, len(index)+1), index...), i)
		name, tagged := sf.Tag.Lookup("query")
		if !tagged {
			if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
				if err := collectQueryFields(sf.Type, idx, out); err != nil {
					return err
				}
			}
			continue
		}
		if name == "-" || name == "" || !sf.IsExported() {
			continue
		}
		o, err := parseWireTag(sf.Tag.Get("wire"))
		if err != nil {
			return fmt.Errorf("field %s: %w", sf.Name, err)
		}
		f := &queryField{name: name, nameAny: name, index: idx, t: sf.Type, elem: sf.Type, o: o, doc: sf.Tag.Get("doc")}
		switch {
		case sf.Type.Kind() == reflect.Pointer:
			f.shape, f.elem = shapePtr, sf.Type.Elem()
		case sf.Type.Kind() == reflect.Slice && classify(sf.Type) == kindSlice:
			f.shape, f.elem = shapeSlice, sf.Type.Elem()
		}
		if !textKind(classify(f.elem)) {
			return fmt.Errorf("field %s: type %s cannot be a query parameter", sf.Name, sf.Type)
		}
		if o.hasDefault {
			if f.shape == shapeSlice {
				return fmt.Errorf("field %s: default= is not supported for lists", sf.Name)
			}
			if f.def, err = parseDefault(f.elem, o.defaultText); err != nil {
				return fmt.Errorf("field %s: %w", sf.Name, err)
			}
		}
		*out = append(*out, f)
	}
	return nil
}

// DecodeQuery decodes query parameters into dst, a pointer to a struct whose
// fields carry query:"name" tags, collecting every problem with a location
// of ["query", name] (plus the index for repeated parameters). Unknown
// parameters are ignored and, as in FastAPI, the last of repeated values
// wins for single-valued fields.
func DecodeQuery(q url.Values, dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return errors.New("wire: DecodeQuery needs a non-nil pointer to a struct")
	}
	ev := rv.Elem()
	qi := queryInfoOf(ev.Type())
	s := &state{loc: make([]any, 1, 4)}
	s.loc[0] = "query"
	for _, f := range qi.fields {
		vals := q[f.name]
		fv := fieldValue(ev, f.index)
		if len(vals) == 0 {
			if f.o.required {
				s.add(s.loc, "missing", msgMissing, f.nameAny)
			} else if f.def.IsValid() {
				setDefault(fv, f.def)
			}
			continue
		}
		eti := infoOf(f.elem)
		s.push(f.nameAny)
		switch f.shape {
		case shapeSlice:
			sl := reflect.MakeSlice(f.t, len(vals), len(vals))
			for i, text := range vals {
				s.push(i)
				s.setText(text, sl.Index(i), eti, noOpts)
				s.pop()
			}
			fv.Set(sl)
			s.checkItems("List", len(vals), f.o)
		case shapePtr:
			p := reflect.New(f.elem)
			s.setText(vals[len(vals)-1], p.Elem(), eti, f.o)
			fv.Set(p)
		default:
			s.setText(vals[len(vals)-1], fv, eti, f.o)
		}
		s.pop()
	}
	if qi.validates && len(s.problems) == 0 {
		ev.Addr().Interface().(Validator).ValidateWire(&Checker{s: s, loc: []any{"query"}})
	}
	return s.err()
}
