package wire

import (
	"reflect"
	"strings"
)

// Mask stands for a secret value wherever a request that held it is shown again, as pydantic
// shows a SecretStr.
const Mask = "**********"

// Masker is implemented (value receiver) by a type tagged secret whose secret values the tag
// cannot mark by itself, such as a union of values and the names of stored ones: MaskSecrets
// returns a copy of the value (of the same type) with each secret value replaced by mask, and
// must not change the receiver or anything it shares.
type Masker interface{ MaskSecrets(mask string) any }

var maskerType = reflect.TypeFor[Masker]()

// MaskSecrets returns a copy of v in which every value of a field tagged secret is [Mask]:
// a string (empty ones stay empty), the strings of a list or the values of a map of
// strings, or whatever a [Masker] masks; fields below a secret one are secret too. What v
// shares (maps, slices, pointers) is copied where something in it is masked, never changed,
// so the caller keeps using v. Interface values are left as they are: their type is not
// known here.
func MaskSecrets[T any](v T) T {
	out, changed := maskValue(reflect.ValueOf(&v).Elem(), false)
	if !changed {
		return v
	}
	return out.Interface().(T)
}

// maskValue returns v masked (secret: v is, or is below, a field tagged secret), and whether
// anything was; when nothing was, it returns v itself.
func maskValue(v reflect.Value, secret bool) (reflect.Value, bool) {
	t := v.Type()
	if secret && t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && t.Implements(maskerType) {
		masked := reflect.ValueOf(v.Interface().(Masker).MaskSecrets(Mask))
		if masked.Type() != t {
			panic("wire: " + t.String() + ".MaskSecrets returned a " + masked.Type().String())
		}
		return masked, true
	}
	switch t.Kind() {
	case reflect.String:
		if !secret || v.Len() == 0 {
			return v, false
		}
		return reflect.ValueOf(Mask).Convert(t), true
	case reflect.Pointer:
		if v.IsNil() {
			return v, false
		}
		elem, changed := maskValue(v.Elem(), secret)
		if !changed {
			return v, false
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(elem)
		return p, true
	case reflect.Struct:
		var out reflect.Value
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			fv, changed := maskValue(v.Field(i), secret || tagSecret(f.Tag.Get("wire")))
			if !changed {
				continue
			}
			if !out.IsValid() {
				out = reflect.New(t).Elem()
				out.Set(v)
			}
			out.Field(i).Set(fv)
		}
		if !out.IsValid() {
			return v, false
		}
		return out, true
	case reflect.Slice, reflect.Array:
		var out reflect.Value
		for i := range v.Len() {
			ev, changed := maskValue(v.Index(i), secret)
			if !changed {
				continue
			}
			if !out.IsValid() {
				if t.Kind() == reflect.Slice {
					out = reflect.MakeSlice(t, v.Len(), v.Len())
				} else {
					out = reflect.New(t).Elem()
				}
				reflect.Copy(out, v)
			}
			out.Index(i).Set(ev)
		}
		if !out.IsValid() {
			return v, false
		}
		return out, true
	case reflect.Map:
		if v.IsNil() {
			return v, false
		}
		var out reflect.Value
		for it := v.MapRange(); it.Next(); {
			ev, changed := maskValue(it.Value(), secret)
			if !changed {
				continue
			}
			if !out.IsValid() {
				out = reflect.MakeMapWithSize(t, v.Len())
				for c := v.MapRange(); c.Next(); {
					out.SetMapIndex(c.Key(), c.Value())
				}
			}
			out.SetMapIndex(it.Key(), ev)
		}
		if !out.IsValid() {
			return v, false
		}
		return out, true
	}
	return v, false
}

// tagSecret reports whether a wire tag has the secret option. A malformed tag panics, as it
// does wherever the type is decoded.
func tagSecret(tag string) bool {
	if !strings.Contains(tag, "secret") {
		return false
	}
	o, err := parseWireTag(tag)
	if err != nil {
		panic("wire: tag " + tag + ": " + err.Error())
	}
	return o.secret
}
