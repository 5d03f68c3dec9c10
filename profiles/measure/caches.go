package measure

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/remat-compile/remat/passes/remat"
)

// The cache sizes used where the machine does not say (MachineCaches):
// those of the machine the project first measured on, a 2 MiB L2 per core
// and a 32 MiB L3 shared with the other cores.
const (
	DefaultL2Bytes = 2 << 20
	DefaultL3Bytes = 32 << 20
)

// SysfsCacheDir is the directory MachineCaches reads: Linux's description
// of the first CPU's caches, one indexN directory per cache.
const SysfsCacheDir = "/sys/devices/system/cpu/cpu0/cache"

// CacheSizes are the cache sizes that Profile measures reuse distances
// against (coldInputs): the L2 of the core that runs the session and the
// L3 behind it.
type CacheSizes struct {
	L2Bytes, L3Bytes int64
	// L2CPUs and L3CPUs count the CPUs that share each cache (0: not
	// known). An L3 shared with other cores (or, in a virtual machine,
	// other guests) holds less of the model's data than its size.
	L2CPUs, L3CPUs int
	// Source says where the sizes come from: the sysfs directory they
	// were read from, "given" (ProfileOptions.Caches), or the built-in
	// defaults with the reason.
	Source string
}

// String writes the sizes and their source: "L2 1.00 MiB (1 CPU), L3
// 32.0 MiB (2 CPUs), from /sys/devices/system/cpu/cpu0/cache".
func (c CacheSizes) String() string {
	level := func(name string, b int64, cpus int) string {
		s := fmt.Sprintf("%s %s", name, remat.FormatBytes(b))
		switch {
		case cpus == 1:
			s += " (1 CPU)"
		case cpus > 1:
			s += fmt.Sprintf(" (%d CPUs)", cpus)
		}
		return s
	}
	return level("L2", c.L2Bytes, c.L2CPUs) + ", " + level("L3", c.L3Bytes, c.L3CPUs) + ", " + c.Source
}

// check rejects sizes that cannot be a cache hierarchy.
func (c CacheSizes) check() error {
	if c.L2Bytes <= 0 || c.L3Bytes < c.L2Bytes {
		return optionErrorf("cache sizes L2 %d B, L3 %d B: want a positive L2 and an L3 at least as large", c.L2Bytes, c.L3Bytes)
	}
	return nil
}

// MachineCaches returns this machine's L2 and L3 sizes, read from sysfs
// (SysfsCacheDir: per level, the unified or data cache). A level that
// sysfs does not describe (another OS, a container without /sys, a CPU
// without an L3) takes its default (DefaultL2Bytes, DefaultL3Bytes), and
// Source says why.
func MachineCaches() CacheSizes {
	return cachesFrom(os.DirFS(SysfsCacheDir), SysfsCacheDir)
}

// cachesFrom reads the caches of fsys, a sysfs cache directory that name
// names in Source, falling back to the defaults level by level.
func cachesFrom(fsys fs.FS, name string) CacheSizes {
	c := CacheSizes{L2Bytes: DefaultL2Bytes, L3Bytes: DefaultL3Bytes}
	found, problems, err := readCacheDir(fsys)
	if err != nil {
		c.Source = fmt.Sprintf("built-in defaults: %s: %v", name, err)
		return c
	}
	var missing []string
	for _, level := range []int{2, 3} {
		info, ok := found[level]
		if !ok {
			missing = append(missing, fmt.Sprintf("L%d", level))
			continue
		}
		if level == 2 {
			c.L2Bytes, c.L2CPUs = info.bytes, info.cpus
		} else {
			c.L3Bytes, c.L3CPUs = info.bytes, info.cpus
		}
	}
	c.Source = "from " + name
	if len(missing) > 0 {
		why := "no data or unified cache of that level listed"
		if len(problems) > 0 {
			why += "; " + strings.Join(problems, "; ")
		}
		c.Source += fmt.Sprintf(" (%s: built-in default, %s)", strings.Join(missing, " and "), why)
	}
	if c.L3Bytes < c.L2Bytes {
		// An L2 larger than the default L3 it is paired with: an L3 no
		// larger than the L2 adds no level.
		c.L3Bytes = c.L2Bytes
	}
	return c
}

// cacheInfo is one cache that sysfs lists.
type cacheInfo struct {
	bytes int64
	cpus  int // 0: unknown
}

// readCacheDir reads the index* directories of a sysfs cache directory
// (files level, type, size and shared_cpu_list) and returns the data or
// unified cache of each level; an instruction cache never counts. A
// directory whose level, type or size is missing or unreadable is skipped
// and named in problems; shared_cpu_list is optional. The error is for a
// directory that cannot be listed.
func readCacheDir(fsys fs.FS) (found map[int]cacheInfo, problems []string, err error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, nil, err
	}
	found = map[int]cacheInfo{}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "index") {
			continue
		}
		read := func(file string) (string, error) {
			b, err := fs.ReadFile(fsys, path.Join(e.Name(), file))
			return strings.TrimSpace(string(b)), err
		}
		levelText, err1 := read("level")
		typ, err2 := read("type")
		sizeText, err3 := read("size")
		if err := firstErr(err1, err2, err3); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", e.Name(), err))
			continue
		}
		level, err := strconv.Atoi(levelText)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: level %q is not a number", e.Name(), levelText))
			continue
		}
		size, err := ParseCacheSize(sizeText)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", e.Name(), err))
			continue
		}
		if typ != "Unified" && typ != "Data" {
			continue
		}
		info := cacheInfo{bytes: size}
		if list, err := read("shared_cpu_list"); err == nil {
			info.cpus = countCPUs(list)
		}
		if prev, ok := found[level]; !ok || info.bytes > prev.bytes {
			found[level] = info
		}
	}
	return found, problems, nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// ParseCacheSize parses a cache size as sysfs writes it ("32K", "2048K",
// "32M", "512" bytes) or with a binary unit ("2MiB", "512KiB"): K, M and G
// are powers of 1024.
func ParseCacheSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if num, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(num), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("cache size %q: want a positive size such as 2048K, 32M or 2MiB", s)
	}
	return n * mult, nil
}

// countCPUs counts the CPUs of a sysfs CPU list ("0", "0-1", "0,2-3");
// 0 when it does not parse.
func countCPUs(list string) int {
	n := 0
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0
			}
		}
		n += b - a + 1
	}
	return n
}
