package cmd

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"

	"github.com/alecthomas/kong"
)

// decimalMappers decode every int and int64 argument and flag as decimal
// digits alone. kong's own reads Go's literals (010 is 8, 0x9 is 9, 1_0
// is 10), so `lite cancel 010` would cancel job 8.
var decimalMappers = []kong.Option{
	kong.TypeMapper(reflect.TypeFor[int64](), decimal(64)),
	kong.TypeMapper(reflect.TypeFor[int](), decimal(strconv.IntSize)),
}

func decimal(bits int) kong.MapperFunc {
	return func(ctx *kong.DecodeContext, target reflect.Value) error {
		var s string
		if err := ctx.Scan.PopValueInto("number", &s); err != nil {
			return err
		}
		n, err := strconv.ParseInt(s, 10, bits)
		switch {
		case errors.Is(err, strconv.ErrRange):
			return fmt.Errorf("%q is out of range: at most %d", s, int64(1)<<(bits-1)-1)
		case err != nil:
			return fmt.Errorf("%q is not a whole number in decimal digits", s)
		}
		target.SetInt(n)
		return nil
	}
}
