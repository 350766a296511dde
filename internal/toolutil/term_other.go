//go:build !linux

package toolutil

import "os"

// isTerminalFile treats any character device as a terminal.
func isTerminalFile(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
