//go:build linux

package toolutil

import (
	"os"
	"syscall"
	"unsafe"
)

// isTerminalFile asks the kernel for the terminal attributes of f: only a
// terminal has them. (golang.org/x/sys/unix would do the same, but its
// current release needs a newer go directive than this module declares.)
func isTerminalFile(f *os.File) bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(),
		uintptr(syscall.TCGETS), uintptr(unsafe.Pointer(&t)))
	return errno == 0
}
