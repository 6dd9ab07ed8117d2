// Package storetest helps tests of what the cache keeps: Fill sets every
// field of a record, so a round trip that drops one is seen.
package storetest

import (
	"reflect"
	"strconv"
)

// Fill sets every field under p, a pointer to a struct, to a value that
// is not zero (each string its own, every slice and map two elements,
// every pointer a filled value), so that a field a copy or an encoding
// leaves out shows as a difference. It panics on a kind of field it cannot
// fill (a func, a channel, an interface), which a test then names.
func Fill(p any) {
	fillValue(reflect.ValueOf(p).Elem(), new(int))
}

// fillValue fills v, numbering the values it sets from *n.
func fillValue(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fillValue(v.Field(i), n)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillValue(v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fillValue(v.Index(i), n)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fillValue(k, n)
			fillValue(e, n)
			v.SetMapIndex(k, e)
		}
	case reflect.String:
		v.SetString("s" + strconv.Itoa(*n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n % 200))
	default:
		panic("storetest.Fill: a field of kind " + v.Kind().String() + " of " + v.Type().String())
	}
}
