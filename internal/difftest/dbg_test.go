package difftest

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"
)

func TestDbgH(t *testing.T) {
	runtime.LockOSThread()
	for _, eng := range []engine{stockEngine{}, subject} {
		for _, appendFlag := range []uint{fAppend, 0} {
			env, _ := eng.openEnv(t.TempDir(), envOpts{maxDBs: 4})
			txn, _ := env.begin(nil, 0)
			dbi, _ := txn.openDBI("x", fCreate|fIntegerKey)
			k := func(v uint64) []byte { return binary.NativeEndian.AppendUint64(nil, v) }
			c0, _ := txn.cursor(dbi)
			fmt.Println(c0.put(k(1000), make([]byte, 1924), 0))
			c1, _ := txn.cursor(dbi)
			kk, _, err := c1.get(nil, nil, cLast)
			fmt.Println("last", kk, err)
			fmt.Println(txn.put(dbi, k(5), make([]byte, 897), 0))
			fmt.Println(txn.put(dbi, k(1004), make([]byte, 1490), appendFlag))
			kk, _, err = c1.get(nil, nil, cNext)
			st, _ := txn.stat(dbi)
			fmt.Println(eng.name(), "append", appendFlag, "next:", kk, err, st)
			txn.abort()
			env.close()
		}
	}
}
