package toolutil

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	o, err := Parse("af:lnps:V", []string{"-pa", "-fout.txt", "env", "-s", "name", "--", "-x"}, "u")
	if err != nil {
		t.Fatal(err)
	}
	if !o.Has('p') || !o.Has('a') || o.Has('l') {
		t.Errorf("flags: p=%v a=%v l=%v", o.Has('p'), o.Has('a'), o.Has('l'))
	}
	if v, ok := o.Value('f'); !ok || v != "out.txt" {
		t.Errorf("-f = %q, %v", v, ok)
	}
	if v, ok := o.Value('s'); !ok || v != "name" {
		t.Errorf("-s = %q, %v", v, ok)
	}
	if want := []string{"env", "-x"}; !reflect.DeepEqual(o.Operands, want) {
		t.Errorf("operands %q, want %q", o.Operands, want)
	}

	o, err = Parse("efr", []string{"-fff", "-e", "-r", "-r", "p"}, "u")
	if err != nil {
		t.Fatal(err)
	}
	if o.Count('f') != 3 || o.Count('r') != 2 || o.Count('e') != 1 {
		t.Errorf("counts f=%d r=%d e=%d", o.Count('f'), o.Count('r'), o.Count('e'))
	}

	_, err = Parse("ps:", []string{"-p", "-h"}, "usage: x\n\nhelp body")
	var hr *HelpRequest
	if !errors.As(err, &hr) || hr.Text != "usage: x\n\nhelp body" {
		t.Errorf("-h: %v, want a HelpRequest with the usage text", err)
	}
	var sb strings.Builder
	if herr := Help(err, &sb); herr != nil || sb.String() != "usage: x\n\nhelp body\n" {
		t.Errorf("Help: %v %q", herr, sb.String())
	}
	ue := &UsageError{Msg: "bad", Usage: "usage: x\n\nhelp body"}
	if ue.Error() != "bad\nusage: x (-h for help)" {
		t.Errorf("usage error text %q", ue.Error())
	}
	for _, bad := range [][]string{{"-z"}, {"-s"}, {"-ps"}} {
		_, err := Parse("ps:", bad, "usage text")
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: error %v, want a UsageError", bad, err)
		} else if ue.Usage != "usage text" {
			t.Errorf("%q: usage %q not attached", bad, ue.Usage)
		}
	}
	// A lone "-" is an operand (conventionally stdin/stdout).
	o, err = Parse("a", []string{"-"}, "u")
	if err != nil || !reflect.DeepEqual(o.Operands, []string{"-"}) {
		t.Errorf(`"-": %v %q`, err, o.Operands)
	}
}

func TestProgressSilentOffTerminal(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, "x", "records")
	for i := 0; i < 5000; i++ {
		p.Add(1)
	}
	p.Done()
	stop := Ticker(&buf, "x", func() string { return "s" })
	stop()
	if buf.Len() != 0 {
		t.Errorf("progress wrote %q to a non-terminal", buf.String())
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("a regular file counts as a terminal")
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 3 << 20: "3.0 MiB", 5 << 30: "5.0 GiB"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
