package bench

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// KeySize is the key length of the plain-database workloads.
const KeySize = 16

// Keys holds fixed-size keys back to back. Key i is i in 16 decimal digits,
// so byte order equals numeric order and key(i) sorts before key(i+1).
type Keys struct {
	buf  []byte
	size int
}

// MakeKeys builds keys 0..n-1.
func MakeKeys(n int) Keys {
	k := Keys{buf: make([]byte, n*KeySize), size: KeySize}
	for i := 0; i < n; i++ {
		PutKey(k.buf[i*KeySize:(i+1)*KeySize], i)
	}
	return k
}

// PutKey writes key i into dst (len KeySize).
func PutKey(dst []byte, i int) {
	s := strconv.AppendUint(dst[:0:0], uint64(i), 10)
	n := copy(dst[KeySize-len(s):], s)
	for j := 0; j < KeySize-n; j++ {
		dst[j] = '0'
	}
}

// At returns key i (a view into the shared buffer).
func (k Keys) At(i int) []byte { return k.buf[i*k.size : (i+1)*k.size : (i+1)*k.size] }

// Len is the number of keys.
func (k Keys) Len() int { return len(k.buf) / k.size }

// mix is splitmix64's finaliser: a cheap bijective scrambler.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Tag is the first 8 bytes (little endian) of value i: timed loops fold it
// into checksums that are compared with the expected value afterwards.
func Tag(i int) uint64 { return mix(uint64(i)) }

// FillValue writes value i into dst: Tag(i) followed by a stream derived
// from i. Every byte depends on i, so a misplaced value is detected.
func FillValue(dst []byte, i int) {
	x := Tag(i)
	for len(dst) >= 8 {
		binary.LittleEndian.PutUint64(dst, x)
		dst = dst[8:]
		x = mix(x)
	}
	for j := range dst {
		dst[j] = byte(x >> (8 * j))
	}
}

// ValueTag reads the tag of a value as FillValue wrote it (0 for a value
// shorter than 8 bytes, which no workload stores).
func ValueTag(v []byte) uint64 {
	if len(v) < 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(v)
}

// Values holds n values of one size back to back.
type Values struct {
	buf  []byte
	size int
}

// MakeValues builds values 0..n-1 of size bytes each.
func MakeValues(n, size int) Values {
	v := Values{buf: make([]byte, n*size), size: size}
	for i := 0; i < n; i++ {
		FillValue(v.buf[i*size:(i+1)*size], i)
	}
	return v
}

// At returns value i.
func (v Values) At(i int) []byte { return v.buf[i*v.size : (i+1)*v.size : (i+1)*v.size] }

// Perm returns a pseudo-random permutation of 0..n-1 from seed (Fisher–Yates
// driven by mix, so every run and every engine sees the same order).
func Perm(n int, seed uint64) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(i)
	}
	s := seed
	for i := n - 1; i > 0; i-- {
		s = mix(s)
		j := int(s % uint64(i+1))
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// Comma formats n with thousands separators (1,000,000).
func Comma(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + Comma(-n)
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// checkValue compares a stored value with the expected value i.
func checkValue(got []byte, i, size int, scratch []byte) error {
	scratch = scratch[:size]
	FillValue(scratch, i)
	if string(got) != string(scratch) {
		return fmt.Errorf("value of key %d is wrong (len %d, want %d)", i, len(got), size)
	}
	return nil
}
