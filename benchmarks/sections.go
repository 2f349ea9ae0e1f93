package benchmarks

import (
	"fmt"
	"strings"
)

// Sections lists the report's sections in the order they run and appear
// within their group. To add a section, write a file with a function of the
// Section.Run type and add one line here (and remove its entry from
// pending).
func Sections() []Section {
	return []Section{
		{Name: "placement-fig9", Title: "Reduce placement: Fig. 9 of Tan et al. (INFOCOM 2013, §V-B)", Group: GroupReproduction, Run: placementFig9},
		{Name: "placement-fig9-beyond", Title: "Reduce placement beyond Fig. 9's range of K and ρ, with each policy's gap to the bound", Group: GroupReproduction, Run: placementFig9Beyond},
		{Name: "placement-fig9-certified", Title: "Reduce placement at K = 100, ρ = 0.9: the certified gap with optd's heaviest bound and policy", Group: GroupReproduction, Run: placementFig9Certified},
		{Name: "thresholds", Title: "Optimal thresholds (Theorems 1-2) and the error of the printed recursion", Group: GroupReproduction, Run: thresholdsSection},
		{Name: "haste-ita", Title: "HaSTE initial task assignment on Tables 2-5 (Yao et al., TCC 2021)", Group: GroupReproduction, Run: hasteITA},
		{Name: "haste-tables", Title: "HaSTE Tables 2-5: makespan, response time and utilization per scheduler (Yao et al., TCC 2021)", Group: GroupReproduction, Run: hasteTables},
		{Name: "dynamicmr-fig8", Title: "DynamicMR: DHSA vs static slots over slot configurations (Tang et al., TCC 2014, Fig. 8)", Group: GroupReproduction, Run: dynamicMRFig8},
		{Name: "sepb-fig9", Title: "DynamicMR: SEPB over percentageOfJobsCheckedForPendingTasks (Tang et al., TCC 2014, Fig. 9)", Group: GroupReproduction, Run: sepbFig9},
		{Name: "stealing-base", Title: "Resource stealing and BASE (Guo et al., Cluster 2012, Figs. 2-3)", Group: GroupReproduction, Run: stealingAndBASE},
		{Name: "dynamicadjust", Title: "DynamicAdjust on skewed jobs (Liu et al., IEICE 2016, Fig. 5)", Group: GroupReproduction, Run: dynamicAdjustFig5},
		{Name: "perf-ita", Title: "ITA: optd exact vs `cbc -threads 1` and HiGHS on the robustness suite", Group: GroupPerformance, Run: perfITA},
		{Name: "perf-lp", Title: "LP: optd's Clp binding vs `glpsol`", Group: GroupPerformance, Run: perfLP},
		{Name: "perf-grpc", Title: "gRPC: PlaceReduces and Heartbeat vs a bare grpc-go server under ghz", Group: GroupPerformance, Run: perfGRPC},
		{Name: "perf-sim", Title: "Simulator throughput", Group: GroupPerformance, Run: perfSim},
		{Name: "perf-thresholds", Title: "Threshold table generation", Group: GroupPerformance, Run: perfThresholds},
		{Name: "perf-mdp", Title: "Largest placement MDP solved in under 10 s", Group: GroupPerformance, Run: perfMDP},
		{Name: "traces-placement", Title: "Reduce placement on SWIM FB-2009, FB-2010 and Coflow FB2010", Group: GroupTraces, Run: tracesPlacement},
		{Name: "placement-network", Title: "Reduce placement in the heartbeat with the shuffle network: Tan et al. Figs. 3 and 10, the Mumak and Coflow traces, HaSTE Tables 2-5", Group: GroupTraces, Run: placementNetwork},
		{Name: "traces-heartbeat", Title: "Heartbeat policies on the Mumak trace, with the lower bound beside each", Group: GroupTraces, Run: tracesHeartbeat},
	}
}

// pending are the results the issue asks for that need capabilities not in
// the tree yet; each becomes a section when its capability lands.
var pending = []struct{ what, needs string }{}

// pendingMarkdown lists the pending results.
func pendingMarkdown() string {
	if len(pending) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("These results of the issue need capabilities that are not in this tree yet; each becomes a section of this report when its capability lands.\n\n")
	for _, p := range pending {
		fmt.Fprintf(&b, "- %s — needs %s.\n", p.what, p.needs)
	}
	return b.String()
}
