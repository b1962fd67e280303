//go:build !unix

package lite

// heldElsewhere cannot ask Windows (or Plan 9, wasm) for another
// process's lock without taking one: it says it cannot tell, so
// CheckInPlace refuses nothing there.
func heldElsewhere(string) (bool, error) { return false, errCannotTell }
