# A fake sysfs/procfs tree for the pressure monitor, laid out as on a Jetson
# AGX Orin with JetPack 6 (source it; then mkfake DIR).
#   zones by type: 0 cpu-thermal 45 C (passive 80, critical 100),
#          1 gpu-thermal 50 C, 2 cv0-thermal 40 C, 3 soc0-thermal 42 C,
#          4 tj-thermal 51 C (soc0 and tj: no built-in mapping)
#   cooling: 0 Processor 1/10, 1 pwm-fan 5/10 (a fan: never a throttle)
#   devfreq 17000000.gpu: idling at 306 MHz, max_freq capped at 918 MHz of
#          the 1300.5 MHz its available_frequencies go up to (throttle 0.706)
#   cpufreq: cpu0 idling at 1.0 GHz of 2.0, ceiling 2.0 (not throttled);
#          cpu1 at 1.5 GHz, scaling_max_freq capped at 1.5 of 2.0 GHz
#          (CPU throttle (2.0 + 1.5) / 4.0 = 0.875; Σcur/Σmax would say 0.625)
#   meminfo: 7.5 % available; PSI some avg10 12.00
put() { mkdir -p "$(dirname "$1")"; printf '%s\n' "$2" >"$1"; }
mkzone() { # ROOT ID TYPE TEMP PASSIVE CRIT
	local z=$1/sys/class/thermal/thermal_zone$2
	put "$z/type" "$3"; put "$z/temp" "$4"
	put "$z/trip_point_0_temp" "$5"; put "$z/trip_point_0_type" passive
	put "$z/trip_point_1_temp" "$6"; put "$z/trip_point_1_type" critical
}
mkfake() {
	local r=$1 f
	mkzone "$r" 0 cpu-thermal 45000 80000 100000
	mkzone "$r" 1 gpu-thermal 50000 85000 105000
	mkzone "$r" 2 cv0-thermal 40000 85000 105000
	mkzone "$r" 3 soc0-thermal 42000 90000 110000
	mkzone "$r" 4 tj-thermal 51000 95000 105000
	put "$r/sys/class/thermal/cooling_device0/type" Processor
	put "$r/sys/class/thermal/cooling_device0/cur_state" 1
	put "$r/sys/class/thermal/cooling_device0/max_state" 10
	put "$r/sys/class/thermal/cooling_device1/type" pwm-fan
	put "$r/sys/class/thermal/cooling_device1/cur_state" 5
	put "$r/sys/class/thermal/cooling_device1/max_state" 10
	f=$r/sys/class/devfreq/17000000.gpu
	put "$f/cur_freq" 306000000
	put "$f/max_freq" 918000000
	put "$f/min_freq" 306000000
	put "$f/available_frequencies" "306000000 408000000 510000000 612000000 714000000 816000000 918000000 1020000000 1122000000 1224000000 1300500000"
	put "$f/governor" nvhost_podgov
	f=$r/sys/devices/system/cpu
	put "$f/cpu0/cpufreq/scaling_cur_freq" 1000000
	put "$f/cpu0/cpufreq/scaling_max_freq" 2000000
	put "$f/cpu0/cpufreq/cpuinfo_max_freq" 2000000
	put "$f/cpu1/cpufreq/scaling_cur_freq" 1500000
	put "$f/cpu1/cpufreq/scaling_max_freq" 1500000
	put "$f/cpu1/cpufreq/cpuinfo_max_freq" 2000000
	put "$f/cpu0/cpu_capacity" 1024
	put "$f/cpu1/cpu_capacity" 1024
	mkdir -p "$r/proc/pressure"
	printf 'MemTotal:        8000000 kB\nMemFree:          100000 kB\nMemAvailable:     600000 kB\n' >"$r/proc/meminfo"
	printf 'some avg10=12.00 avg60=3.00 avg300=1.00 total=123456\nfull avg10=2.00 avg60=0.50 avg300=0.10 total=23456\n' >"$r/proc/pressure/memory"
}
# jq-less JSON checks: jget FILE PYTHON-EXPR (d is the object)
jget() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
