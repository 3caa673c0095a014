#!/usr/bin/env bash
# make_assets.sh - generate the demo rooms' audio assets with espeak-ng and sox.
#
# Usage: Tools/make_assets.sh [OUT_DIR]      (default: <repo>/Scenes/audio)
#
# * Deterministic: every sox call runs with -R (repeatable random seed) and -D
#   (no dither), espeak-ng is deterministic, and the "random" event times come
#   from a fixed-seed LCG below, so the output is identical run to run.
# * Idempotent: a file is only (re)made when it is missing or older than this
#   script; if nothing needs making it prints "assets up to date".
# * Loops (fire, lute, stream, bird, vendor, hum and the five beds) are
#   seamless: continuous textures are rendered X seconds too long and the tail
#   is crossfaded (equal power) into the head; the ringing tails of the lute
#   and the PA music are folded back onto their heads; event tracks start and
#   end in silence; the hum is built from whole periods.
# * FOA beds are 4-channel AmbiX (ACN order W Y Z X, SN3D); forest_hoa2 is
#   9-channel second-order AmbiX (ACN 0..8: W Y Z X V T R S U, SN3D).
#   Azimuth: 0 = ahead, +90 = listener's right, so Y = sin(-az)cos(el)
#   (ambisonic +Y is left). AmbiX files claim no speaker positions (WAV
#   channel mask 0).
# * arena_pa_51 is a 5.1 speaker bed: 6 channels in WAV order FL FR FC LFE
#   SL SR, channel mask 0x60F.
#
# Needs: sox (14.4), espeak-ng, awk.
set -euo pipefail

SCRIPT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
ROOT="$(cd "$(dirname "$SCRIPT")/.." && pwd)"
OUT_DIR="${1:-$ROOT/Scenes/audio}"

ASSETS=(fire barkeep tavern_crowd_foa lute stream bird forest_hoa2
        announcer vendor arena_crowd_foa arena_pa_51 hum
        player_mic guest prompt_welcome prompt_welcome_short)

for tool in sox soxi espeak-ng awk; do
    command -v "$tool" >/dev/null 2>&1 || { echo "make_assets: '$tool' not found (apt-get install sox espeak-ng)" >&2; exit 1; }
done

mkdir -p "$OUT_DIR"
OUT_DIR="$(cd "$OUT_DIR" && pwd)"

# ---------------------------------------------------------------- staleness
TODO=()
for a in "${ASSETS[@]}"; do
    f="$OUT_DIR/$a.wav"
    if [[ ! -s "$f" || ! "$f" -nt "$SCRIPT" ]]; then TODO+=("$a"); fi
done
if (( ${#TODO[@]} == 0 )); then
    echo "assets up to date"
    exit 0
fi

# (sox pipe inputs below are run by sh, so the temp path must not contain spaces)
TMP="$(mktemp -d "${TMPDIR:-/tmp}/make_assets.XXXXXX")"
case $TMP in *[[:space:]]*) rmdir "$TMP"; TMP="$(mktemp -d /tmp/make_assets.XXXXXX)" ;; esac
trap 'rm -rf "$TMP"' EXIT

SR=48000

# sox: repeatable noise (-R), no dither (-D: silence stays digital silence),
# no progress meter. Warnings (e.g. clipping) still go to stderr.
sx() { sox -R -D -q "$@"; }

# Milliseconds (integer) -> seconds string "s.mmm".
sec() { printf '%d.%03d' $(( $1 / 1000 )) $(( $1 % 1000 )); }

# Fixed-seed linear congruential generator (independent of bash's $RANDOM).
# rseed N; rnd MAX -> REPLY in [0, MAX).  Do not call inside $( ).
_seed=1
rseed() { _seed=$1; }
rnd() {
    _seed=$(( (_seed * 1103515245 + 12345) % 2147483648 ))
    REPLY=$(( (_seed / 65536) % $1 ))
}
# rrange LO HI -> REPLY in [LO, HI]
rrange() { rnd $(( $2 - $1 + 1 )); REPLY=$(( REPLY + $1 )); }

# ------------------------------------------------------------ noise sources
# sox's noise generators restart from the same seed in every call (-R), and
# pink/brown are derived from the same sequence as white. To get decorrelated
# layers we cut every layer from a long master file at its own offset; the
# offsets below are unique across all masters and all assets (seconds):
#   fire 0-17 | stream 20-48 | tavern 50-90 | forest 90-140 | arena 140-240
#   forest_hoa2 250-300 | arena_pa_51 300-330
MASTER_LEN=330
make_masters() {
    local t
    for t in whitenoise pinknoise brownnoise; do
        sx -n -r $SR -c 1 -b 16 "$TMP/master_$t.wav" synth $MASTER_LEN $t gain -10
    done
}
# noise TYPE OFFSET_S DUR_S OUT [effects...]
noise() {
    local t=$1 off=$2 dur=$3 out=$4; shift 4
    sx "$TMP/master_$t.wav" "$out" trim "$off" "$dur" "$@"
}

# -------------------------------------------------------------- loop tools
# loop_wrap IN OUT L X MODE [ROTATE]
#   IN must be at least L+X seconds long. OUT is exactly L seconds:
#   OUT[0:X] = IN[0:X]*in(t) + IN[L:L+X]*out(t), OUT[X:L] = IN[X:L].
#   MODE q = equal-power (quarter-sine) crossfade, for uncorrelated textures;
#   MODE add = plain overlap-add of the tail onto the head (ringing notes).
#   OUT[L-1] -> OUT[0] continues IN[L-1] -> IN[L], so the seam is inaudible;
#   unless ROTATE is "norotate" the result is then rotated to its smoothest
#   point (rotate_smooth).
loop_wrap() {
    local in=$1 out=$2 L=$3 X=$4 mode=$5 rot=${6:-rotate}
    local Ls Xs b="$TMP/lw_$(basename "$out")"
    Ls=$(awk -v l="$L" -v r=$SR 'BEGIN{printf "%d", l*r + 0.5}')
    Xs=$(awk -v x="$X" -v r=$SR 'BEGIN{printf "%d", x*r + 0.5}')
    if [[ $mode == q ]]; then
        sx "$in" "$b.h.sox" trim 0 "${Xs}s" fade q "${Xs}s"
        sx "$in" "$b.t.sox" trim "${Ls}s" "${Xs}s" fade q 0 "${Xs}s" "${Xs}s"
    else
        sx "$in" "$b.h.sox" trim 0 "${Xs}s"
        sx "$in" "$b.t.sox" trim "${Ls}s" "${Xs}s"
    fi
    sx "$in" "$b.b.sox" trim "${Xs}s" "$(( Ls - Xs ))s"
    sx -m -v 1 "$b.h.sox" -v 1 "$b.t.sox" "$b.x.sox"
    if [[ $rot == rotate ]]; then
        sx "$b.x.sox" "$b.b.sox" "$b.w.sox"
        rotate_smooth "$b.w.sox" "$out"
    else
        sx "$b.x.sox" "$b.b.sox" "$out"
    fi
}

# fit FILE LEN_S - pad with trailing silence or trim FILE to exactly LEN_S.
fit() {
    local f=$1 n have
    n=$(awk -v l="$2" -v r=$SR 'BEGIN{printf "%d", l*r + 0.5}')
    have=$(soxi -s "$f")
    if (( have < n )); then
        sx "$f" "$f.fit.sox" pad 0 "$(( n - have ))s"
    else
        sx "$f" "$f.fit.sox" trim 0 "${n}s"
    fi
    mv -f "$f.fit.sox" "$f"
}

# rotate_smooth IN OUT - rotate an already seamless loop so that its start
#   falls where every channel is smoothest (smallest sample-to-sample step
#   relative to that channel's mean step), searching the first second.
#   Rotation keeps the content and period unchanged; it only moves the seam
#   to the spot with the least sample-to-sample change, so the last and first
#   samples join with a tiny step.
rotate_smooth() {
    local in=$1 out=$2 k b="$TMP/rs_$(basename "$2")"
    sox "$in" -t dat "$b.dat" trim 0 1          # search the first second
    k=$(awk '
        /^;/ { next }
        FNR == NR {                      # pass 1: mean |step| per channel
            for (c = 2; c <= NF; c++) { if (n) s[c] += ($c > p[c] ? $c - p[c] : p[c] - $c); p[c] = $c }
            n++; next }
        {                                # pass 2: smoothest frame
            if (i) { sc = 0
                for (c = 2; c <= NF; c++) { d = $c - q[c]; if (d < 0) d = -d; sc += d / (s[c] / (n - 1) + 1e-12) }
                if (best == "" || sc < best) { best = sc; k = i } }
            for (c = 2; c <= NF; c++) q[c] = $c
            i++ }
        END { print k + 0 }' "$b.dat" "$b.dat")
    rm -f "$b.dat"
    if (( k == 0 )); then cp "$in" "$out"; return; fi
    sx "$in" "$b.a.sox" trim "${k}s"
    sx "$in" "$b.b.sox" trim 0 "${k}s"
    sx "$b.a.sox" "$b.b.sox" "$out"
}

# ------------------------------------------------------------- FOA encoder
# foa IN(mono) OUT(4ch) AZ EL GAIN  - AmbiX ACN/SN3D first-order encode.
foa() {
    local in=$1 out=$2 az=$3 el=$4 g=$5 w y z x
    read -r w y z x < <(awk -v a="$az" -v e="$el" -v g="$g" 'BEGIN {
        d = atan2(0, -1) / 180
        printf "%.6f %.6f %.6f %.6f\n", g, g*sin(-a*d)*cos(e*d), g*sin(e*d), g*cos(a*d)*cos(e*d) }')
    sx "$in" "$out" remix -m "1v$w" "1v$y" "1v$z" "1v$x"
}
# hoa2 IN(mono) OUT(9ch) AZ EL GAIN  - AmbiX ACN/SN3D second-order encode.
#   With x ahead, y left, z up: W Y Z X, V = sqrt3 xy, T = sqrt3 yz,
#   R = (3z^2 - 1)/2, S = sqrt3 xz, U = sqrt3/2 (x^2 - y^2).
hoa2() {
    local in=$1 out=$2 az=$3 el=$4 g=$5 gains
    read -r -a gains < <(awk -v a="$az" -v e="$el" -v g="$g" 'BEGIN {
        d = atan2(0, -1) / 180; s3 = sqrt(3)
        x = cos(a*d)*cos(e*d); y = sin(-a*d)*cos(e*d); z = sin(e*d)
        h[0] = 1; h[1] = y; h[2] = z; h[3] = x
        h[4] = s3*x*y; h[5] = s3*y*z; h[6] = (3*z*z - 1)/2; h[7] = s3*x*z; h[8] = s3/2*(x*x - y*y)
        for (i = 0; i <= 8; i++) printf "1v%.6f%s", g*h[i], (i < 8 ? " " : "\n") }')
    sx "$in" "$out" remix -m "${gains[@]}"
}
# wav_mask FILE MASK - set the dwChannelMask of a WAVE_FORMAT_EXTENSIBLE WAV
#   (sox writes every WAV of 3 or more channels that way) to MASK.
wav_mask() {
    local f=$1 m=$(( $2 )) b
    if [[ "$(dd if="$f" bs=1 skip=12 count=4 status=none)" == "fmt " &&
          "$(od -An -tx1 -j20 -N2 "$f" | tr -d ' \n')" == feff ]]; then
        b=$(printf '\\%03o' $(( m & 255 )) $(( m >> 8 & 255 )) $(( m >> 16 & 255 )) $(( m >> 24 & 255 )))
        printf "$b" | dd of="$f" bs=1 seek=40 count=4 conv=notrunc status=none
    else
        echo "make_assets: unexpected WAV header in $f, channel mask left as is" >&2
    fi
}
# ambix_wav IN OUT - write the final 16-bit AmbiX WAV (4 or 9 channels), peak
#   -2 dBFS (one gain for all channels, so directions are kept). sox labels
#   4-channel WAVs as quad speakers (dwChannelMask 0x33); AmbiX channels are
#   not speaker feeds, so the mask is cleared to 0.
ambix_wav() {
    sx "$1" -b 16 "$2" gain -n -2
    wav_mask "$2" 0
}
# mix_layers OUT IN... - plain sum (each layer already carries its gain).
mix_layers() {
    local out=$1 f args=(); shift
    for f in "$@"; do args+=(-v 1 "$f"); done
    sx -m "${args[@]}" "$out"
}

# ------------------------------------------------------------------ speech
# speak OUT(48k mono .sox) VOICE PITCH SPEED TEXT [sox effects...]
speak() {
    local out=$1 v=$2 p=$3 s=$4 text=$5; shift 5
    espeak-ng -v "$v" -p "$p" -s "$s" -g 2 -w "$out.22k.wav" "$text"
    sx "$out.22k.wav" "$out" rate -v $SR "$@"
}

# ------------------------------------------------------------ event tracks
# Events are concatenated as "silence + event" pieces via sox pipes; the
# track is then padded/trimmed to its exact length.
# piece "INPUT" EFFECTS... adds one piece (INPUT e.g. "-n -r 48000 -c 1").
PIECES=()
piece() { local in=$1; shift; PIECES+=("|sox -R -D -q $in -p $*"); }
# render_pieces OUT LEN_S
render_pieces() {
    sx "${PIECES[@]}" "$1"
    fit "$1" "$2"
    PIECES=()
}

# chirps OUT LEN_S SEED FIRST_MS - groups of bird chirps with silent gaps.
# The last group ends >= 0.3 s before LEN so the track starts and ends silent.
chirps() {
    local out=$1 len=$2 seed=$3 t=$4 lim k n f1 f2 d g gap shape
    lim=$(( ${len%.*} * 1000 - 300 ))
    rseed "$seed"
    local cursor=0
    while :; do
        rrange 2 5; n=$REPLY
        rrange 2600 4200; f1=$REPLY
        rnd 3; shape=$REPLY
        (( t + n * 190 > lim )) && break
        for (( k = 0; k < n; k++ )); do
            rrange 50 95; d=$REPLY
            case $shape in
                0) f2=$(( f1 + 1400 )) ;;            # rising chirp
                1) f2=$(( f1 - 900 )) ;;             # falling chirp
                *) f2=$(( f1 + (k % 2) * 800 )) ;;   # alternating whistle
            esac
            rrange 0 6; g=$REPLY
            gap=$(( t - cursor ))
            piece "-n -r $SR -c 1" synth "$(sec "$d")" sine "$f1-$f2" \
                fade h 0.008 "$(sec "$d")" "$(sec $(( d / 2 )))" gain -"$g" \
                pad "$(sec "$gap")" 0
            cursor=$(( t + d ))
            rrange 40 90; t=$(( cursor + REPLY ))
        done
        rrange 700 1500; t=$(( t + REPLY ))
    done
    render_pieces "$out" "$len"
}

# ================================================================= ASSETS
# Each gen_NAME writes $TMP/out/NAME.wav (final format); it is moved into
# OUT_DIR only when complete.

gen_fire() {   # mono LOOP 6 s: low roar + sparse crackles
    local L=6 X=0.5 d="$TMP/fire" i t cursor off dur hp lp g
    mkdir -p "$d"
    # Roar: brown noise, low-passed, with a slow flicker.
    noise brownnoise 0 6.5 "$d/roar.sox" highpass 40 lowpass 350 tremolo 0.7 25 gain -n -8
    noise pinknoise 7 6.5 "$d/hiss.sox" highpass 300 lowpass 1800 tremolo 1.9 40 gain -n -24
    # Crackles: short decaying noise bursts at LCG-random times; some clusters.
    rseed 1717; cursor=0; t=40; i=0
    while (( t < 6400 )); do
        rrange 3 28; dur=$REPLY
        rrange 900 3500; hp=$REPLY
        rrange 0 16; g=$REPLY
        rrange 5000 14000; lp=$REPLY
        off=$(sec $(( 14000 + i * 60 )))
        piece "$TMP/master_whitenoise.wav" trim "$off" "$(sec "$dur")" highpass "$hp" lowpass "$lp" \
            fade l 0.0005 "$(sec "$dur")" "$(sec $(( dur - 1 )))" gain -"$g" \
            pad "$(sec $(( t - cursor )))" 0
        cursor=$(( t + dur )); i=$(( i + 1 ))
        rnd 4
        if (( REPLY == 0 )); then rrange 8 40; else rrange 80 420; fi
        t=$(( cursor + REPLY ))
    done
    render_pieces "$d/crackle.sox" 6.5
    sx "$d/crackle.sox" "$d/crackle2.sox" gain -n -4
    mix_layers "$d/mix.sox" "$d/roar.sox" "$d/hiss.sox" "$d/crackle2.sox"
    loop_wrap "$d/mix.sox" "$d/loop.sox" $L $X q
    sx "$d/loop.sox" -b 16 "$TMP/out/fire.wav" gain -n -2
}

gen_barkeep() {   # mono speech, not looped
    local d="$TMP/barkeep"; mkdir -p "$d"
    speak "$d/s.sox" en-gb-scotland+m3 38 150 \
        "Welcome to the Prancing Lantern. Ale is two coins, stew is three."
    sx "$d/s.sox" -b 16 "$TMP/out/barkeep.wav" highpass 70 pad 0.05 0.2 gain -n -2
}

gen_player_mic() {   # mono microphone: room noise, the local player talks at 6 s
    local d="$TMP/player_mic"; mkdir -p "$d"
    speak "$d/s.sox" en-us+m1 45 155 "Hello? Can anyone hear me? Hello?"
    sx "$d/s.sox" "$d/p.sox" highpass 90 gain -n -12 pad 6 0
    sx -n -r $SR -c 1 "$d/n.sox" synth 14 pinknoise gain -62
    sx -m "$d/p.sox" "$d/n.sox" "$d/m.sox" trim 0 14
    sx "$d/m.sox" -b 16 "$TMP/out/player_mic.wav"
}

gen_guest() {   # mono remote participant: says a line at 12 s
    local d="$TMP/guest"; mkdir -p "$d"
    speak "$d/s.sox" en+f3 55 160 "Evening, everyone. Is the stew any good tonight?"
    sx "$d/s.sox" -b 16 "$TMP/out/guest.wav" highpass 80 pad 12 0.5 gain -n -3
}

gen_prompt_welcome() {   # mono prompt, the long variant
    local d="$TMP/prompt_welcome"; mkdir -p "$d"
    speak "$d/s.sox" en-us+f2 50 165 "Welcome to the tavern. Press T to talk, and M to mute your microphone."
    sx "$d/s.sox" -b 16 "$TMP/out/prompt_welcome.wav" highpass 80 pad 0.05 0.1 gain -n -6
}

gen_prompt_welcome_short() {   # mono prompt, the short variant
    local d="$TMP/prompt_welcome_short"; mkdir -p "$d"
    speak "$d/s.sox" en-us+f2 50 175 "Welcome."
    sx "$d/s.sox" -b 16 "$TMP/out/prompt_welcome_short.wav" highpass 80 pad 0.05 0.1 gain -n -6
}

gen_tavern_crowd_foa() {   # FOA LOOP 8 s: murmuring crowd
    local L=8 X=1 N=9 d="$TMP/tavern" layers=() i s v p sp lead az el g text
    mkdir -p "$d"
    # voice  pitch speed lead-in  azimuth elev gain  text
    local spec=(
        "en+m3|35|140|0.0|-120|0|0.30|Aye, the roads are bad this season. Bandits near the old mill, they say. I lost two carts last month. Two whole carts."
        "en+f2|62|165|0.6|-40|0|0.26|Oh, you should have seen his face! He dropped the whole tray. And then the cat ran off with a sausage, right across the floor."
        "en+m1|45|155|1.3|30|0|0.28|Another round over here! And bread, more bread. Who is paying? Not me, I paid last time. Ask the tall one."
        "en+f4|70|150|0.3|100|0|0.24|My sister married the blacksmith. Lovely wedding, lovely. The music went on until dawn, and nobody went home."
        "en+m7|25|130|0.9|170|0|0.27|Dice, anyone? Double or nothing. Come on, friend, luck is with you tonight. One more throw."
    )
    i=0
    for s in "${spec[@]}"; do
        IFS='|' read -r v p sp lead az el g text <<<"$s"
        speak "$d/v$i.sox" "$v" "$p" "$sp" "$text" \
            highpass 150 lowpass 2400 gain -8 reverb 35 50 70 pad "$lead" 0 gain -n -6
        fit "$d/v$i.sox" $N
        foa "$d/v$i.sox" "$d/e_v$i.sox" "$az" "$el" "$g"
        layers+=("$d/e_v$i.sox"); i=$(( i + 1 ))
    done
    # Diffuse room rumble: four decorrelated pink-noise layers around the room.
    local off=50
    for az in 45 135 -135 -45; do
        noise pinknoise $off $N "$d/n$az.sox" highpass 120 lowpass 1200 tremolo 0.37 30 gain -n -6
        foa "$d/n$az.sox" "$d/e_n$az.sox" "$az" 0 0.07
        layers+=("$d/e_n$az.sox"); off=$(( off + 10 ))
    done
    # A few mug clinks at a table front-right.
    piece "-n -r $SR -c 2" synth 0.4 pluck 2637 pluck 3951 remix - fade 0.001 0.4 0.35 pad 1.7 0
    piece "-n -r $SR -c 2" synth 0.4 pluck 2489 pluck 3729 remix - fade 0.001 0.4 0.35 pad 0.09 0
    piece "-n -r $SR -c 2" synth 0.4 pluck 2793 pluck 4186 remix - fade 0.001 0.4 0.35 gain -4 pad 3.6 0
    render_pieces "$d/clink.sox" $N
    sx "$d/clink.sox" "$d/clink2.sox" gain -n -6
    foa "$d/clink2.sox" "$d/e_clink.sox" 60 -10 0.12
    layers+=("$d/e_clink.sox")
    mix_layers "$d/mix.sox" "${layers[@]}"
    loop_wrap "$d/mix.sox" "$d/loop.sox" $L $X q
    ambix_wav "$d/loop.sox" "$TMP/out/tavern_crowd_foa.wav"
}

gen_lute() {   # mono LOOP 8 s: plucked melody, 32 eighth notes at 120 bpm
    local L=8 R=2 d="$TMP/lute" i=0 n semi len start
    mkdir -p "$d"
    # semitones from A4 : length in eighths (0.25 s); D dorian tune, 4 bars.
    local melody=(-7:2 -4:1 -2:1 0:2 0:1 -2:1
                  -4:2 -5:1 -7:1 -5:2 -9:2
                  -7:2 -4:1 -2:1 0:1 3:1 5:2
                  3:1 0:1 -2:1 -5:1 -7:4)
    # bass: semitones : start eighth
    local bass=(-19:0 -24:8 -21:12 -19:16 -16:20 -24:24 -19:28)
    local args=() pos=0
    for n in "${melody[@]}"; do
        semi=${n%%:*}; len=${n##*:}
        start=$(sec $(( pos * 250 )))
        sx -n -r $SR -c 1 "$d/m$i.sox" synth 1.6 pluck "%$semi" \
            fade h 0.003 1.6 0.8 pad "$start" 0
        args+=(-v 0.3 "$d/m$i.sox"); pos=$(( pos + len )); i=$(( i + 1 ))
    done
    (( pos == 32 )) || { echo "lute: melody is $pos eighths, not 32" >&2; exit 1; }
    for n in "${bass[@]}"; do
        semi=${n%%:*}; start=$(sec $(( ${n##*:} * 250 )))
        sx -n -r $SR -c 1 "$d/b$i.sox" synth 2.0 pluck "%$semi" \
            fade h 0.003 2.0 1.0 pad "$start" 0
        args+=(-v 0.18 "$d/b$i.sox"); i=$(( i + 1 ))
    done
    sx -m "${args[@]}" "$d/mix.sox" highpass 60
    fit "$d/mix.sox" $(( L + R ))
    # Notes fade in over 3 ms, so the seam is already smooth; keep the tune
    # starting on its first note (no rotation).
    loop_wrap "$d/mix.sox" "$d/loop.sox" $L $R add norotate
    sx "$d/loop.sox" -b 16 "$TMP/out/lute.wav" gain -n -2
}

gen_stream() {   # mono LOOP 6 s: babbling brook
    local L=6 X=0.5 N=6.5 d="$TMP/stream" t cursor dur f g
    mkdir -p "$d"
    noise pinknoise 20 $N "$d/base.sox" highpass 250 lowpass 5000 gain -n -10
    noise whitenoise 27 $N "$d/b1.sox" bandpass 650 2q tremolo 2.3 80 phaser 0.8 0.74 3 0.4 0.31 -s gain -n -12
    noise whitenoise 34 $N "$d/b2.sox" bandpass 1350 2q tremolo 3.7 75 phaser 0.8 0.74 2 0.4 0.53 -s gain -n -13
    noise whitenoise 41 $N "$d/b3.sox" bandpass 2700 1.5q tremolo 5.9 70 gain -n -17
    # Bubbles: short rising sine blips at LCG-random times.
    rseed 4242; cursor=0; t=20
    while (( t < 6300 )); do
        rrange 12 40; dur=$REPLY
        rrange 350 1300; f=$REPLY
        rrange 4 16; g=$REPLY
        piece "-n -r $SR -c 1" synth "$(sec "$dur")" sine "$f-$(( f * 2 ))" \
            fade h 0.003 "$(sec "$dur")" "$(sec $(( dur / 2 )))" gain -"$g" \
            pad "$(sec $(( t - cursor )))" 0
        cursor=$(( t + dur )); rrange 15 160; t=$(( cursor + REPLY ))
    done
    render_pieces "$d/bub.sox" $N
    sx "$d/bub.sox" "$d/bub2.sox" gain -n -8
    mix_layers "$d/mix0.sox" "$d/base.sox" "$d/b1.sox" "$d/b2.sox" "$d/b3.sox" "$d/bub2.sox"
    sx "$d/mix0.sox" "$d/mix.sox" lowpass 6500
    loop_wrap "$d/mix.sox" "$d/loop.sox" $L $X q
    sx "$d/loop.sox" -b 16 "$TMP/out/stream.wav" gain -n -2
}

gen_bird() {   # mono LOOP 6 s: chirp groups separated by silence
    local d="$TMP/bird"; mkdir -p "$d"
    chirps "$d/c.sox" 6 777 150
    sx "$d/c.sox" -b 16 "$TMP/out/bird.wav" gain -n -2
}

gen_forest_hoa2() {   # 2nd-order AmbiX LOOP 8 s: wind, leaves and birds, layers
                      # at distinct directions, one bird up in the canopy (el 40)
    local L=8 X=1 N=9 d="$TMP/forest_hoa2" layers=()
    mkdir -p "$d"
    # Wind through trunks (low, gusty), near ear height.
    noise brownnoise 250 $N "$d/w1.sox" highpass 50 lowpass 500 tremolo 0.13 70 gain -n -6
    noise pinknoise 260 $N "$d/w2.sox" highpass 90 lowpass 900 tremolo 0.21 65 gain -n -6
    # Leaf rustle (high, fluttering) in the lower branches.
    noise whitenoise 270 $N "$d/l1.sox" highpass 2500 lowpass 9000 tremolo 0.17 80 tremolo 5.3 35 gain -n -6
    noise whitenoise 280 $N "$d/l2.sox" highpass 3000 lowpass 10000 tremolo 0.27 75 tremolo 6.7 40 gain -n -6
    noise pinknoise 290 $N "$d/l3.sox" highpass 1800 lowpass 7000 tremolo 0.31 70 tremolo 4.9 30 gain -n -6
    # Birds: one fairly close, up in the canopy; one distant and low.
    chirps "$d/c1.sox" $N 2718 300
    chirps "$d/c2.sox" $N 1414 2300
    sx "$d/c1.sox" "$d/b1.sox" lowpass 7000 gain -8 reverb 30 50 60 gain -n -6
    sx "$d/c2.sox" "$d/b2.sox" speed 0.9 rate -v $SR lowpass 5000 gain -8 reverb 70 50 90 gain -n -6
    fit "$d/b2.sox" $N
    #    layer     encoded   az  el  gain
    hoa2 "$d/w1.sox" "$d/e1.sox" -80 0 0.30
    hoa2 "$d/w2.sox" "$d/e2.sox" 150 5 0.28
    hoa2 "$d/l1.sox" "$d/e3.sox" 45 20 0.20
    hoa2 "$d/l2.sox" "$d/e4.sox" -130 25 0.18
    hoa2 "$d/l3.sox" "$d/e5.sox" 110 15 0.16
    hoa2 "$d/b1.sox" "$d/e6.sox" 20 40 0.16
    hoa2 "$d/b2.sox" "$d/e7.sox" -100 10 0.08
    layers=("$d"/e[1-7].sox)
    mix_layers "$d/mix.sox" "${layers[@]}"
    loop_wrap "$d/mix.sox" "$d/loop.sox" $L $X q
    ambix_wav "$d/loop.sox" "$TMP/out/forest_hoa2.wav"
}

gen_announcer() {   # mono speech at espeak's native 22050 Hz (NOT resampled)
    local d="$TMP/announcer"; mkdir -p "$d"
    espeak-ng -v en+m2 -p 38 -s 140 -g 4 -w "$d/s.wav" \
        "Attention please. The next match begins in five minutes. Teams to the gates."
    sx "$d/s.wav" -b 16 "$TMP/out/announcer.wav" highpass 120 pad 0.05 0.2 gain -n -2
}

gen_vendor() {   # mono LOOP 48 kHz: call + 1.5 s silence
    local d="$TMP/vendor"; mkdir -p "$d"
    speak "$d/s.sox" en+m4 52 160 "Cold drinks! Roasted nuts!"
    sx "$d/s.sox" -b 16 "$TMP/out/vendor.wav" highpass 80 \
        fade h 0.005 0 0.02 pad 0.1 1.5 gain -n -2
}

gen_arena_crowd_foa() {   # FOA LOOP 8 s: roaring crowd, strongest toward the gates (az 0)
    local L=8 X=1 N=9 d="$TMP/arena" layers=() i=0 off=140 s v p sp lead az el g text
    mkdir -p "$d"
    # Roar: eight decorrelated band-passed pink-noise layers, raised stands (el 10),
    # weighted toward the front.
    local roar=(0:0.34 45:0.28 -45:0.28 90:0.19 -90:0.19 135:0.13 -135:0.13 180:0.11)
    local trem=(0.31 0.23 0.41 0.19 0.27 0.37 0.21 0.33)
    for s in "${roar[@]}"; do
        az=${s%%:*}; g=${s##*:}
        noise pinknoise $off $N "$d/r$i.sox" sinc 200-2600 tremolo "${trem[$i]}" 35 gain -6 reverb 50 gain -n -6
        foa "$d/r$i.sox" "$d/e_r$i.sox" "$az" 10 "$g"
        layers+=("$d/e_r$i.sox"); off=$(( off + 10 )); i=$(( i + 1 ))
    done
    # Shouting voices, mostly in front.
    local spec=(
        "en+m1|40|175|0.0|-15|8|0.30|Go! Go! Come on, red team! Yeah! Let's go, let's go! Push forward! Red team, red team, all the way!"
        "en+m5|30|160|0.8|20|8|0.28|Blue team! Blue team! Show them! Oh, come on! Blue team, blue team! Get up there and fight!"
        "en+f3|65|180|0.4|55|12|0.20|Over here! Yes! We love you! Hey, hey, hey! Look at me! Wave to us! Over here, over here!"
        "en+m4|35|165|1.5|-60|12|0.20|What a play! Did you see that? Unbelievable! Again! Again! I have waited all year for this match!"
        "en+f5|70|170|0.2|-130|15|0.12|Excuse me, sorry, is this seat free? Hurry, it starts soon! Where are the others? I told them the north gate."
        "en+m6|28|150|1.1|150|15|0.12|Tickets! Who needs tickets? Best seats, right by the gates! Two for one! Last chance for tickets!"
    )
    for s in "${spec[@]}"; do
        IFS='|' read -r v p sp lead az el g text <<<"$s"
        speak "$d/v$i.sox" "$v" "$p" "$sp" "$text" \
            highpass 120 lowpass 3500 gain -8 reverb 60 60 90 pad "$lead" 0 gain -n -6
        fit "$d/v$i.sox" $N
        foa "$d/v$i.sox" "$d/e_v$i.sox" "$az" "$el" "$g"
        layers+=("$d/e_v$i.sox"); i=$(( i + 1 ))
    done
    mix_layers "$d/mix.sox" "${layers[@]}"
    loop_wrap "$d/mix.sox" "$d/loop.sox" $L $X q
    ambix_wav "$d/loop.sox" "$TMP/out/arena_crowd_foa.wav"
}

gen_arena_pa_51() {   # 5.1 LOOP 8 s: the arena's PA system over a 5.1 speaker array
    # FL FR: brass fanfare + pad + plucked arpeggio, C F G C, one chord per bar
    #        (whole notes, 2 s at 120 bpm); FC: chime + announcement;
    # LFE: rumble; SL SR: crowd + the hall's echo of the music.
    local L=8 R=3 X=1 N=9 d="$TMP/arena_pa" i=0 n semi len pos bar c t
    mkdir -p "$d"
    # Chords, semitones from A4: bass + three upper voices.
    local chords=("-21 -9 -5 -2" "-16 -4 0 3" "-14 -2 2 5" "-21 -9 -5 -2")
    # Fanfare, semitones from A4 : length in eighths (0.25 s), 4 bars of 8.
    local fanfare=(-2:1 -2:1 3:2 7:2 10:2   12:4 8:2 3:2   2:2 5:2 10:2 8:2   7:4 3:4)
    local pads=() v
    for (( bar = 0; bar < 4; bar++ )); do
        read -r -a v <<<"${chords[$bar]}"
        sx -r $SR -c 4 -n "$d/pad$bar.sox" synth 2.4 sawtooth "%${v[0]}" sawtooth "%${v[1]}" \
            sawtooth "%${v[2]}" sawtooth "%${v[3]}" remix - lowpass 1400 gain -10 \
            fade h 0.15 2.4 0.5 pad "$(( bar * 2 ))" 0
        pads+=(-v 1 "$d/pad$bar.sox")
    done
    sx -m "${pads[@]}" "$d/pad.sox"
    fit "$d/pad.sox" $(( L + R ))
    pos=0
    for n in "${fanfare[@]}"; do
        semi=${n%%:*}; len=$(( ${n##*:} * 250 ))
        piece "-r $SR -c 2 -n" synth "$(sec $(( len - 40 )))" sawtooth "%$semi" square "%$semi" \
            remix - lowpass 2600 gain -10 fade h 0.02 "$(sec $(( len - 40 )))" 0.06 pad 0 0.04
        pos=$(( pos + len ))
    done
    (( pos == L * 1000 )) || { echo "arena_pa_51: fanfare is $pos ms, not $L s" >&2; exit 1; }
    render_pieces "$d/brass.sox" $(( L + R ))
    for (( bar = 0; bar < 4; bar++ )); do
        read -r -a v <<<"${chords[$bar]}"
        for i in 1 2 3 2 1 2 3 2; do
            piece "-n -r $SR -c 1" synth 0.25 pluck "%$(( v[i] + 12 ))" gain -6 fade h 0.003 0.25 0.12
        done
    done
    render_pieces "$d/arp.sox" $(( L + R ))
    # Front pair: fanfare leans left, arpeggio leans right; one gain for both.
    sx -m -v 0.45 "$d/pad.sox" -v 0.7 "$d/brass.sox" -v 0.3 "$d/arp.sox" "$d/fl.sox"
    sx -m -v 0.45 "$d/pad.sox" -v 0.45 "$d/brass.sox" -v 0.55 "$d/arp.sox" "$d/fr.sox"
    sx -M "$d/fl.sox" "$d/fr.sox" "$d/dry.sox" highpass 60
    sx "$d/dry.sox" "$d/front0.sox" reverb 25 50 80 gain -n -6 fade 0 "$(( L + R ))" 0.5
    loop_wrap "$d/front0.sox" "$d/front.sox" $L $R add norotate
    sx "$d/front.sox" "$d/FL.sox" remix 1
    sx "$d/front.sox" "$d/FR.sox" remix 2
    # Centre: two-tone chime, then the announcement; starts and ends silent.
    sx -r $SR -c 2 -n "$d/ding.sox" synth 1.6 sine %7 sine %19 remix - fade l 0.004 1.6 1.55 pad 0.3 0
    sx -r $SR -c 2 -n "$d/dong.sox" synth 1.9 sine %3 sine %15 remix - fade l 0.004 1.9 1.85 pad 0.85 0
    speak "$d/s.sox" en+f2 55 150 "Welcome to the arena! Please take your seats." \
        highpass 250 lowpass 3800 gain -10 pad 0 1.2 reverb 45 50 100 pad 2.3 0 gain -n -3
    sx -m -v 0.35 "$d/ding.sox" -v 0.35 "$d/dong.sox" -v 1 "$d/s.sox" "$d/fc0.sox"
    fit "$d/fc0.sox" $L
    sx "$d/fc0.sox" "$d/FC.sox" gain -n -6 fade 0 $L 0.3
    # LFE: brown-noise rumble below 80 Hz.
    noise brownnoise 300 $N "$d/lfe0.sox" highpass 20 lowpass 80 lowpass 80 tremolo 0.17 40 gain -n -6
    loop_wrap "$d/lfe0.sox" "$d/lfe1.sox" $L $X q
    sx "$d/lfe1.sox" "$d/LFE.sox" gain -10
    # Surrounds: decorrelated crowd murmur + wet-only echo of the front pair.
    noise pinknoise 310 $N "$d/cl0.sox" sinc 250-2500 tremolo 0.27 35 gain -n -6
    noise pinknoise 320 $N "$d/cr0.sox" sinc 250-2500 tremolo 0.33 35 gain -n -6
    loop_wrap "$d/cl0.sox" "$d/cl.sox" $L $X q
    loop_wrap "$d/cr0.sox" "$d/cr.sox" $L $X q
    sx "$d/dry.sox" "$d/echo0.sox" reverb -w 70 40 100 100 120 lowpass 2500 gain -n -6 \
        fade 0 "$(( L + R ))" 0.8
    loop_wrap "$d/echo0.sox" "$d/echo.sox" $L $R add norotate
    sx "$d/echo.sox" "$d/el.sox" remix 1
    sx "$d/echo.sox" "$d/er.sox" remix 2
    sx -m -v 0.3 "$d/cl.sox" -v 0.3 "$d/el.sox" "$d/SL.sox"
    sx -m -v 0.3 "$d/cr.sox" -v 0.3 "$d/er.sox" "$d/SR.sox"
    # Merge in WAV 5.1 order; every channel is exactly L seconds.
    for c in FL FR FC LFE SL SR; do
        t=$(soxi -s "$d/$c.sox")
        (( t == L * SR )) || { echo "arena_pa_51: $c is $t samples, not $(( L * SR ))" >&2; exit 1; }
    done
    sx -M "$d/FL.sox" "$d/FR.sox" "$d/FC.sox" "$d/LFE.sox" "$d/SL.sox" "$d/SR.sox" "$d/bed.sox"
    sx "$d/bed.sox" -b 16 "$TMP/out/arena_pa_51.wav" gain -n -2
    wav_mask "$TMP/out/arena_pa_51.wav" 0x60F   # FL FR FC LFE SL SR
}

gen_hum() {   # mono LOOP 4 s: 100/200/300 Hz, whole periods (400/800/1200)
    local d="$TMP/hum"; mkdir -p "$d"
    sx -n -r $SR -c 1 "$d/a.sox" synth 192000s sine 100
    sx -n -r $SR -c 1 "$d/b.sox" synth 192000s sine 200
    sx -n -r $SR -c 1 "$d/c.sox" synth 192000s sine 300
    sx -m -v 0.5 "$d/a.sox" -v 0.25 "$d/b.sox" -v 0.12 "$d/c.sox" "$d/h.sox"
    rotate_smooth "$d/h.sox" "$d/r.sox"
    sx "$d/r.sox" -b 16 "$TMP/out/hum.wav" gain -n -3
}

# ==================================================================== main
T0=$(date +%s.%N)
mkdir -p "$TMP/out"
make_masters
for a in "${TODO[@]}"; do
    "gen_$a"
    mv -f "$TMP/out/$a.wav" "$OUT_DIR/$a.wav"
    f="$OUT_DIR/$a.wav"
    printf 'made %-22s %5s Hz  %s ch  %5.2f s  %8d bytes\n' "$a.wav" \
        "$(soxi -r "$f")" "$(soxi -c "$f")" "$(soxi -D "$f")" "$(stat -c %s "$f")"
done
total=0
for a in "${ASSETS[@]}"; do total=$(( total + $(stat -c %s "$OUT_DIR/$a.wav") )); done
awk -v b=$total -v t0="$T0" -v t1="$(date +%s.%N)" -v n=${#TODO[@]} -v nf=${#ASSETS[@]} -v dir="$OUT_DIR" \
    'BEGIN { printf "total %d bytes (%.2f MB) in %d files, %s (made %d in %.1f s)\n", b, b/1048576, nf, dir, n, t1-t0 }'
