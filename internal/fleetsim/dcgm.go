package fleetsim

import (
	"fmt"
	"math"
	"strconv"
)

// dcgmFamilies returns the DCGM exporter families for the GPUs of the
// scrape's pod (one GPU per engine), or nil without an exporter. Label
// order is the exporter's, not sorted.
func (sc *Scrape) dcgmFamilies() []family {
	p := sc.pod
	c := &p.fleet.Config
	gen := c.GPUExporter
	if gen == NoGPUExporter {
		return nil
	}
	host, driver := "Hostname", "DCGM_FI_DRIVER_VERSION"
	if gen == DCGMRatio {
		host, driver = "hostname", "DCGM_FI_SYSTEM_DRIVER_VERSION"
	}
	gpuLabels := func(i int) []label {
		return []label{
			{"gpu", strconv.Itoa(i)},
			{"UUID", fmt.Sprintf("GPU-%08x-5e1d-4c3a-9b7f-%012x", 0x3f2a0000+p.Index, 0x1d0000+i)},
			{"pci_bus_id", fmt.Sprintf("00000000:%02X:00.0", 0x1e+i)},
			{"device", "nvidia" + strconv.Itoa(i)},
			{"modelName", "NVIDIA L40S"},
			{host, p.Node},
			{driver, "550.90.07"},
			{"container", "vllm"},
			{"namespace", c.Namespace},
			{"pod", sc.PodName()},
		}
	}
	e := &p.Engine
	totalMiB := math.Round(e.Memory.GPUBytes / (1 << 20))
	usedMiB := math.Round(e.GPUMemoryUtilization*e.Memory.GPUBytes/(1<<20)) + 512
	// Before an OOM kill the pod's memory use climbs towards the total.
	for _, r := range c.Pods[p.Index].Restarts {
		if r.Reason == RestartOOMKilled && sc.Offset >= r.At-OOMRamp && sc.Offset < r.At {
			frac := float64(sc.Offset-(r.At-OOMRamp)) / float64(OOMRamp)
			usedMiB += math.Round(0.9 * frac * (totalMiB - usedMiB - 420))
		}
	}
	memScale, memUnit := 1.0, "MiB"
	if gen == DCGMRatio {
		memScale, memUnit = 1<<20, "bytes"
	}
	type def struct {
		name, help string
		val        func(busy float64) float64
	}
	defs := []def{
		{"DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", func(b float64) float64 { return 210 + 15*math.Round(b*154) }},
		{"DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", func(float64) float64 { return 9001 }},
		{"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", func(b float64) float64 { return math.Round(34 + 40*b) }},
		{"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", func(b float64) float64 { return 38.214 + 301.5*b }},
		{"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", func(b float64) float64 { return math.Round(100 * b) }},
		{"DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", func(b float64) float64 { return math.Round(55 * b) }},
		{"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in " + memUnit + ").", func(float64) float64 { return (totalMiB - usedMiB - 420) * memScale }},
		{"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in " + memUnit + ").", func(float64) float64 { return usedMiB * memScale }},
		{"DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", func(float64) float64 { return 0 }},
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Ratio of time the graphics engine is active.", func(b float64) float64 { return math.Round(b*1e6) / 1e6 }},
	}
	if gen == DCGMRatio {
		defs[4] = def{"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (ratio).", func(b float64) float64 { return math.Round(b*100) / 100 }}
		defs[5] = def{"DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (ratio).", func(b float64) float64 { return math.Round(55*b) / 100 }}
	}
	fams := make([]family, len(defs))
	for k, d := range defs {
		fams[k] = family{name: d.name, help: d.help, typ: typeGauge}
		for i := range sc.snaps {
			fams[k].series = append(fams[k].series, series{labels: gpuLabels(i), value: d.val(sc.snaps[i].busyFrac)})
		}
	}
	return fams
}

// appendDCGMText writes DCGM families as dcgm-exporter does: integer fields
// as integers, floating-point fields with six decimals.
func appendDCGMText(b []byte, fams []family) []byte {
	for i := range fams {
		f := &fams[i]
		b = appendHeader(b, f.name, f.help, "gauge")
		for j := range f.series {
			s := &f.series[j]
			b = append(b, f.name...)
			b = appendLabels(b, s.labels, "")
			b = append(b, ' ')
			if s.value == math.Trunc(s.value) && math.Abs(s.value) < 1e15 {
				b = strconv.AppendInt(b, int64(s.value), 10)
			} else {
				b = strconv.AppendFloat(b, s.value, 'f', 6, 64)
			}
			b = append(b, '\n')
		}
	}
	return b
}
