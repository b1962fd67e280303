package litetest

import (
	"reflect"
	"testing"

	"github.com/liteq/lite/lite"
)

// TestAddSumsEveryField pins Drain's sum to lite.Report as it is: a field
// added to Report and not to add fails here, rather than read zero.
func TestAddSumsEveryField(t *testing.T) {
	var a, b lite.Report
	va, vb := reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem()
	for i := range va.NumField() {
		va.Field(i).SetInt(int64(i + 1))
		vb.Field(i).SetInt(int64(100 * (i + 1)))
	}
	sum := reflect.ValueOf(add(a, b))
	for i := range sum.NumField() {
		if got, want := sum.Field(i).Int(), int64(101*(i+1)); got != want {
			t.Errorf("add: %s = %d, want %d", sum.Type().Field(i).Name, got, want)
		}
	}
}
