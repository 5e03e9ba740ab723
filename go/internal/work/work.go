// Package work is the contract's CPU work: 32-bit FNV-1a over the low byte of the loop index.
package work

const (
	fnvOffset uint32 = 2166136261
	fnvPrime  uint32 = 16777619
)

// FNV1a runs n iterations: x = 2166136261; for i in 0..n-1: x = (x ^ (i & 0xff)) * 16777619 mod 2^32.
func FNV1a(n int) uint32 {
	x := fnvOffset
	for i := 0; i < n; i++ {
		x = (x ^ uint32(i&0xff)) * fnvPrime
	}
	return x
}
