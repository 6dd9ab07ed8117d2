package server

import (
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// validStrings replaces, in m and the messages it holds, every string
// (field, list element, map key or value) that is no UTF-8 by the same
// text with U+FFFD for each invalid sequence. It reports whether it
// changed anything.
func validStrings(m protoreflect.Message) bool {
	changed := false
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				if nv, ok := validValue(fd, l.Get(i)); ok {
					l.Set(i, nv)
					changed = true
				}
			}
		case fd.IsMap():
			changed = validMap(fd, v.Map()) || changed
		default:
			if nv, ok := validValue(fd, v); ok {
				m.Set(fd, nv)
				changed = true
			}
		}
		return true
	})
	return changed
}

// validValue returns v made valid when it is a string that is no UTF-8 (a
// new value, true) or a message that held one (made valid in place, true).
func validValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) (protoreflect.Value, bool) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if s := v.String(); !utf8.ValidString(s) {
			return protoreflect.ValueOfString(strings.ToValidUTF8(s, "\uFFFD")), true
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if validStrings(v.Message()) {
			return v, true
		}
	}
	return v, false
}

// validMap makes the keys and values of mp valid; a key made valid that
// collides with another keeps the value set last.
func validMap(fd protoreflect.FieldDescriptor, mp protoreflect.Map) bool {
	type entry struct {
		old, key protoreflect.MapKey
		val      protoreflect.Value
	}
	var fixed []entry
	changed := false
	mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		nv, vChanged := validValue(fd.MapValue(), v)
		key, kChanged := k, false
		if s, ok := k.Interface().(string); ok && !utf8.ValidString(s) {
			key, kChanged = protoreflect.ValueOfString(strings.ToValidUTF8(s, "\uFFFD")).MapKey(), true
		}
		if vChanged || kChanged {
			fixed = append(fixed, entry{k, key, nv})
		}
		return true
	})
	for _, e := range fixed {
		mp.Clear(e.old)
		mp.Set(e.key, e.val)
		changed = true
	}
	return changed
}
