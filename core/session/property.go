package session

import (
	"reflect"
	"strconv"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/naming"
	"github.com/hilodb/hilodb/core/uuid"
)

// Identity property kinds.
const (
	propNone = iota
	propString
	propStringPtr
	propInt
	propUint
	propUUID
)

// idProperty is where an entity keeps its id: a struct field or a map key.
type idProperty struct {
	field    []int // struct field index; nil for maps or no property
	jsonName string
	kind     int
	mapKey   string
}

var uuidType = reflect.TypeOf(uuid.UUID{})

// findIDProperty finds the identity field of struct type typ.
func findIDProperty(conv *naming.Conventions, typ reflect.Type, coll string) (idProperty, error) {
	name := conv.IdentityPropertyName(coll)
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		jsonName := f.Name
		if tag := f.Tag.Get("json"); tag != "" {
			if n, _, _ := cutComma(tag); n == "-" {
				continue
			} else if n != "" {
				jsonName = n
			}
		}
		var match bool
		if conv.FindIdentityProperty != nil {
			match = conv.FindIdentityProperty(f)
		} else {
			match = f.Name == name || jsonName == name || (name == "Id" && f.Name == "ID")
		}
		if !match {
			continue
		}
		p := idProperty{field: f.Index, jsonName: jsonName}
		switch {
		case f.Type == uuidType:
			p.kind = propUUID
		case f.Type.Kind() == reflect.String:
			p.kind = propString
		case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.String:
			p.kind = propStringPtr
		case f.Type.Kind() >= reflect.Int && f.Type.Kind() <= reflect.Int64:
			p.kind = propInt
		case f.Type.Kind() >= reflect.Uint && f.Type.Kind() <= reflect.Uint64:
			p.kind = propUint
		default:
			return p, core.NewError(core.ErrBadParameter, "", "", "bad parameter: identity property %s.%s has type %s; use a string, *string, an integer or uuid.UUID", typ.Name(), f.Name, f.Type)
		}
		return p, nil
	}
	return idProperty{}, nil
}

func cutComma(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ',' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// get returns the id an entity brings; present is false when it has none
// (no property, a nil *string, an empty string, or a zero number or UUID).
func (p idProperty) get(entity any, conv *naming.Conventions, sep, coll string) (string, bool, error) {
	if m, ok := entity.(map[string]any); ok {
		v, ok := m[p.mapKey]
		if !ok || v == nil {
			return "", false, nil
		}
		s, ok := v.(string)
		if !ok {
			return "", false, core.NewError(core.ErrBadParameter, "", "", "bad parameter: identity property %q of an object literal must be a string", p.mapKey)
		}
		return s, true, nil
	}
	if p.field == nil {
		return "", false, nil
	}
	f := reflect.ValueOf(entity).Elem().FieldByIndex(p.field)
	prefix := conv.IDPrefix(coll) + sep
	switch p.kind {
	case propString:
		return f.String(), f.String() != "", nil
	case propStringPtr:
		if f.IsNil() {
			return "", false, nil
		}
		return f.Elem().String(), true, nil
	case propInt:
		if f.Int() == 0 {
			return "", false, nil
		}
		return prefix + strconv.FormatInt(f.Int(), 10), true, nil
	case propUint:
		if f.Uint() == 0 {
			return "", false, nil
		}
		return prefix + strconv.FormatUint(f.Uint(), 10), true, nil
	case propUUID:
		u := f.Interface().(uuid.UUID)
		if u == (uuid.UUID{}) {
			return "", false, nil
		}
		return prefix + u.String(), true, nil
	}
	return "", false, nil
}

// set writes id into the entity's identity property; numeric and UUID
// properties get the value part after the last separator.
func (p idProperty) set(entity any, id string, conv *naming.Conventions) error {
	if m, ok := entity.(map[string]any); ok {
		m[p.mapKey] = id
		return nil
	}
	if p.field == nil {
		return nil
	}
	f := reflect.ValueOf(entity).Elem().FieldByIndex(p.field)
	switch p.kind {
	case propString:
		f.SetString(id)
	case propStringPtr:
		v := reflect.New(f.Type().Elem())
		v.Elem().SetString(id)
		f.Set(v)
	case propInt:
		n, err := strconv.ParseInt(conv.IDValuePart(id), 10, f.Type().Bits())
		if err != nil {
			return core.NewError(core.ErrBadParameter, id, "", "bad parameter: id %q has no numeric value part for %s", id, f.Type())
		}
		f.SetInt(n)
	case propUint:
		n, err := strconv.ParseUint(conv.IDValuePart(id), 10, f.Type().Bits())
		if err != nil {
			return core.NewError(core.ErrBadParameter, id, "", "bad parameter: id %q has no numeric value part for %s", id, f.Type())
		}
		f.SetUint(n)
	case propUUID:
		u, err := uuid.Parse(conv.IDValuePart(id))
		if err != nil {
			return core.NewError(core.ErrBadParameter, id, "", "bad parameter: id %q has no UUID value part", id)
		}
		f.Set(reflect.ValueOf(u))
	}
	return nil
}
