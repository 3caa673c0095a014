// A room built in code: a looping tone at the listener's left, moved to the
// right after a second, and a talker whose voice the app pushes block by
// block, as a network would deliver it. Two seconds are rendered offline
// into a WAV file, and the levels of each ear say where the tone was.
import Engine
import Foundation

let rate = Room.sampleRate
let output = CommandLine.arguments.dropFirst().first ?? "embed-example.wav"

let tone = (0..<rate).map { Float(0.25 * sin(2 * Double.pi * 440 * Double($0) / Double(rate))) }
let toneSource = SourceDescription(id: "tone", mode: .point, placement: .fixed(Position(-2, 0, 0)), loop: true)
let scene = SceneDescription(file: "embed-example", name: "Embedded room", route: .headphones, sources: [toneSource])
let room = Room(scene: scene, sources: [RoomSource(toneSource, audio: AudioBuffer(mono: tone))])

let session = try RoomSession(room: room, devices: (microphoneIsCapture: false, outputIsPlayback: false), deviceRoute: nil)
let talker = try session.addStream(id: "talker", at: Position(0, 0, -1.5))

let channels = session.channelLayout.channelCount
let block = RoomEngine.blockFrames
let writer = try AudioFileWriter(path: output, format: .wavFloat, channelCount: channels, sampleRate: rate)
var samples = [Float](repeating: 0, count: block * channels)
var voice = [Float](repeating: 0, count: block)
var energy = [[Double]](repeating: [0, 0], count: 2)

for index in 0..<(2 * rate / block) {
    let frame = index * block
    if frame == rate { try session.move("tone", to: Position(2, 0, 0), overMilliseconds: 0) }
    // The talker: a 180 Hz buzz that comes and goes four times a second.
    for offset in 0..<block {
        let time = Double(frame + offset) / Double(rate)
        voice[offset] = Float(0.2 * sin(2 * .pi * 180 * time) * max(0, sin(2 * .pi * 4 * time)))
    }
    talker.push(voice)
    samples.withUnsafeMutableBufferPointer { session.render(into: $0, frames: block) }
    try samples.withUnsafeBufferPointer { try writer.write(interleaved: $0) }
    for offset in 0..<block {
        for ear in 0..<2 { energy[frame < rate ? 0 : 1][ear] += Double(samples[offset * channels + ear] * samples[offset * channels + ear]) }
    }
}
try writer.close()

func decibels(_ sum: Double) -> Double { 10 * log10(max(sum / Double(rate), 1e-20)) }
for (second, ears) in energy.enumerated() {
    print(String(format: "second %d: left %.1f dBFS, right %.1f dBFS", second + 1, decibels(ears[0]), decibels(ears[1])))
}
print("wrote \(output)")
session.close()
// The tone was at the left, then at the right: anything else is a broken build of the engine.
guard energy[0][0] > energy[0][1], energy[1][1] > energy[1][0] else {
    print("the tone did not move from the left ear to the right")
    exit(1)
}
