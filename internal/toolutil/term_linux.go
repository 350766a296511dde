//go:build linux

package toolutil

import (
	"os"

	"golang.org/x/sys/unix"
)

// isTerminalFile asks the kernel for the terminal attributes of f: only a
// terminal has them.
func isTerminalFile(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
