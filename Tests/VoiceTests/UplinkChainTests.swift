import Testing
import Voice

@Suite struct UplinkChainTests {
    /// Runs the chain over `mic` with `far` as what was played; returns the uplink and the muted-talker events by frame.
    static func run(mic: [Float], far: [Float], muted: Bool) throws -> (uplink: [Float], events: [(Int, MutedTalkerDetector.Change)]) {
        let chain = try UplinkChain(echoCancellation: true)
        chain.muted = muted
        var uplink = mic, events: [(Int, MutedTalkerDetector.Change)] = []
        let frames = mic.count / 160
        uplink.withUnsafeMutableBufferPointer { out in
            far.withUnsafeBufferPointer { reference in
                for frame in 0..<frames {
                    let range = (frame * 160)..<((frame + 1) * 160)
                    let result = chain.process(UnsafeMutableBufferPointer(rebasing: out[range]), reference: UnsafeBufferPointer(rebasing: reference[range]))
                    if let change = result.mutedTalker { events.append((frame, change)) }
                }
            }
        }
        return (Array(uplink.prefix(frames * 160)), events)
    }

    @Test func echoAloneRaisesNoMutedTalkerEvent() throws {
        let far = try VoiceSignals.speech("announcer")
        let result = try Self.run(mic: VoiceSignals.echo(of: far), far: far, muted: true)
        #expect(result.events.isEmpty, "events from echo alone: \(result.events.map(\.1))")
        #expect(result.uplink.allSatisfy { $0 == 0 })
    }

    @Test func talkingWhileMutedIsOneStartedAndOneEnded() throws {
        let near = try VoiceSignals.speech("barkeep")
        let silence = [Float](repeating: 0, count: 16_000)
        let mic = silence + near + silence + silence
        let result = try Self.run(mic: mic, far: [Float](repeating: 0, count: mic.count), muted: true)
        #expect(result.events.map(\.1) == [.started, .ended])
        let speechStart = (16_000 + near.firstIndex { abs($0) > 0.005 }!) / 160
        let speechEnd = (16_000 + near.lastIndex { abs($0) > 0.005 }!) / 160
        if result.events.count == 2 {
            #expect(result.events[0].0 - speechStart <= 30, "started \(result.events[0].0 - speechStart) frames after the onset")
            #expect(result.events[1].0 - speechEnd >= 50, "ended \(result.events[1].0 - speechEnd) frames after the speech")
        }
        let unmuted = try Self.run(mic: mic, far: [Float](repeating: 0, count: mic.count), muted: false)
        #expect(unmuted.events.isEmpty && unmuted.uplink.contains { $0 != 0 })
    }
}
