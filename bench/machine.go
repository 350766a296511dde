package bench

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Machine describes where a benchmark ran.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	Kernel    string `json:"kernel"`
	PageSize  int    `json:"page_size"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
}

// DetectMachine reads the CPU model from /proc/cpuinfo and the kernel
// release from /proc/sys/kernel/osrelease where available.
func DetectMachine() Machine {
	m := Machine{
		CPU:       "unknown CPU",
		Cores:     runtime.NumCPU(),
		Kernel:    runtime.GOOS,
		PageSize:  os.Getpagesize(),
		GoVersion: runtime.Version(),
		OS:        runtime.GOOS + "/" + runtime.GOARCH,
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.Join(strings.Fields(v), " ")
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(runtime.GOOS + " " + string(b))
	}
	return m
}

// String is the one-line form used above every table.
func (m Machine) String() string {
	return fmt.Sprintf("%s, %d cores, %s, %d KiB pages, %s",
		m.CPU, m.Cores, m.Kernel, m.PageSize/1024, m.GoVersion)
}

// LoadAvg1 returns the 1-minute load average, or -1 if unknown.
func LoadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}
