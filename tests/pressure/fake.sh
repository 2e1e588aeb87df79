# A fake sysfs/procfs tree for the pressure monitor (source it; then mkfake DIR).
#   zones: 0 cpu-thermal 45 C (passive 80, critical 100), 1 gpu-thermal 50 C,
#          2 cv0-thermal 40 C, 3 soc-thermal 42 C (no built-in mapping)
#   cooling: 0 Processor 2/10; devfreq 17000000.ga10b 612/1300.5 MHz;
#   cpufreq: cpu0 1.0/2.0 GHz, cpu1 2.0/2.0 GHz;
#   meminfo: 7.5 % available; PSI some avg10 12.00
put() { mkdir -p "$(dirname "$1")"; printf '%s\n' "$2" >"$1"; }
mkzone() { # ROOT ID TYPE TEMP PASSIVE CRIT
	local z=$1/sys/class/thermal/thermal_zone$2
	put "$z/type" "$3"; put "$z/temp" "$4"
	put "$z/trip_point_0_temp" "$5"; put "$z/trip_point_0_type" passive
	put "$z/trip_point_1_temp" "$6"; put "$z/trip_point_1_type" critical
}
mkfake() {
	local r=$1
	mkzone "$r" 0 cpu-thermal 45000 80000 100000
	mkzone "$r" 1 gpu-thermal 50000 85000 105000
	mkzone "$r" 2 cv0-thermal 40000 85000 105000
	mkzone "$r" 3 soc-thermal 42000 90000 110000
	put "$r/sys/class/thermal/cooling_device0/type" Processor
	put "$r/sys/class/thermal/cooling_device0/cur_state" 2
	put "$r/sys/class/thermal/cooling_device0/max_state" 10
	put "$r/sys/class/devfreq/17000000.ga10b/cur_freq" 612000000
	put "$r/sys/class/devfreq/17000000.ga10b/max_freq" 1300500000
	put "$r/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq" 1000000
	put "$r/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq" 2000000
	put "$r/sys/devices/system/cpu/cpu1/cpufreq/scaling_cur_freq" 2000000
	put "$r/sys/devices/system/cpu/cpu1/cpufreq/cpuinfo_max_freq" 2000000
	mkdir -p "$r/proc/pressure"
	printf 'MemTotal:        8000000 kB\nMemFree:          100000 kB\nMemAvailable:     600000 kB\n' >"$r/proc/meminfo"
	printf 'some avg10=12.00 avg60=3.00 avg300=1.00 total=123456\nfull avg10=2.00 avg60=0.50 avg300=0.10 total=23456\n' >"$r/proc/pressure/memory"
}
# jq-less JSON checks: jget FILE PYTHON-EXPR (d is the object)
jget() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
