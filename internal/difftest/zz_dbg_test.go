package difftest

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

func TestZZDbg(t *testing.T) {
	seed, _ := strconv.ParseInt(os.Getenv("ZZSEED"), 10, 64)
	end, _ := strconv.Atoi(os.Getenv("ZZEND"))
	db, _ := strconv.Atoi(os.Getenv("ZZDB"))
	ops := genDupOps(seed)
	for i := max(0, end-60); i <= end; i++ {
		o := ops[i]
		if o.db == db {
			fmt.Println(i, o)
		}
	}
}
