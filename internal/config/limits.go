package config

import "fmt"

// checkLimits refuses negative limits in l, and limits above the ceiling max (where max
// sets one), saying which and by how much; what names l in the messages.
func checkLimits(what string, l, max LimitsConfig) []error {
	type limit struct {
		key      string
		got, top float64
	}
	var errs []error
	for _, x := range []limit{
		{"memory_mb", float64(l.MemoryMB), float64(max.MemoryMB)},
		{"cpus", l.CPUs, max.CPUs},
		{"pids", float64(l.PIDs), float64(max.PIDs)},
		{"tmp_mb", float64(l.TmpMB), float64(max.TmpMB)},
		{"disk_mb", float64(l.DiskMB), 0},
	} {
		switch {
		case x.got < 0:
			errs = append(errs, fmt.Errorf("%s: %s %g must not be negative", what, x.key, x.got))
		case x.top > 0 && x.got > x.top:
			errs = append(errs, fmt.Errorf("%s: %s %g is above the ceiling of %g (sandbox_max_%s)", what, x.key, x.got, x.top, x.key))
		}
	}
	return errs
}

// WithDefaults returns l with every limit it leaves at zero taken from def.
func (l LimitsConfig) WithDefaults(def LimitsConfig) LimitsConfig {
	pick := func(v, d int64) int64 {
		if v == 0 {
			return d
		}
		return v
	}
	out := LimitsConfig{
		MemoryMB: pick(l.MemoryMB, def.MemoryMB),
		PIDs:     pick(l.PIDs, def.PIDs),
		TmpMB:    pick(l.TmpMB, def.TmpMB),
		DiskMB:   pick(l.DiskMB, def.DiskMB),
		CPUs:     l.CPUs,
	}
	if out.CPUs == 0 {
		out.CPUs = def.CPUs
	}
	return out
}
