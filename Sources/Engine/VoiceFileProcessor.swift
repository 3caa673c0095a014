import AudioCore
import Devices
import Voice

/// Runs the engine's uplink over a recorded microphone and what was played
/// meanwhile, as `scenectl process-voice` does.
public enum VoiceFileProcessor {
    /// What the uplink made of the recording.
    public struct Result: Sendable {
        /// The uplink, at the microphone file's rate and length, lined up with it.
        public var uplink: AudioBuffer
        /// One decision per 10 ms of the microphone, onsets' look-back applied.
        public var decisions: [Bool]
        /// Voice activity and muted-talker events, on the microphone's timeline.
        public var events: [EngineEvent]
    }

    /// - Parameters:
    ///   - mic: one channel at any rate.
    ///   - far: what was played, at any rate; several channels are averaged
    ///     as the engine averages its master. Nil, or shorter than the
    ///     microphone, is silence from where it ends.
    ///   - muted: runs the chain muted: the uplink is silent, and speech raises muted-talker events.
    ///   - echoCancellation: whether the canceller runs.
    public static func run(mic: DecodedAudio, far: DecodedAudio?, muted: Bool, echoCancellation: Bool) throws -> Result {
        precondition(mic.buffer.channelCount == 1, "one microphone channel")
        let micSamples = try SampleRateConverter.convert(mic.buffer, from: mic.sampleRate, to: Room.sampleRate).samples
        var farSamples = [Float]()
        if let far {
            farSamples = try far.monoSamples(at: Room.sampleRate)
        }
        let uplink = try MicrophoneUplink(echoCancellation: echoCancellation)
        uplink.muted = muted
        let block = MicrophoneUplink.blockFrames
        // Both inputs start early by the resampler's delay, so the chain's
        // frames, its decisions and its events line up with the files.
        let lead = uplink.chainLatencyFrames
        let latency = uplink.latencyFrames - lead
        // Enough blocks to bring the last of the microphone out through the resamplers.
        let blocks = (micSamples.count - lead + latency + block - 1) / block
        var micBlock = [Float](repeating: 0, count: block), farBlock = micBlock, outBlock = micBlock
        var output = [Float]()
        output.reserveCapacity(blocks * block)
        var decisions = [Bool]()
        var events = [EngineEvent]()
        var localTalker = LocalTalker()
        for index in 0..<blocks {
            let start = index * block
            for offset in 0..<block {
                let source = lead + start + offset
                micBlock[offset] = source < micSamples.count ? micSamples[source] : 0
                farBlock[offset] = source < farSamples.count ? farSamples[source] : 0
            }
            let frame = micBlock.withUnsafeBufferPointer { micBlock in
                farBlock.withUnsafeBufferPointer { farBlock in
                    outBlock.withUnsafeMutableBufferPointer { uplink.process(mic: micBlock, reference: farBlock, uplink: $0) }
                }
            }
            output += outBlock
            for back in 0..<min(frame.backfilled, decisions.count) { decisions[decisions.count - 1 - back] = true }
            decisions.append(frame.speech)
            localTalker.hear(frame, muted: muted, at: start) { event in
                var event = event
                event.seq = events.count + 1
                events.append(event)
            }
        }
        // The first `lead` frames went into the resampler's memory: silence stands in for them.
        let aligned = AudioBuffer(mono: [Float](repeating: 0, count: lead) + output[latency..<(latency + micSamples.count - lead)])
        let uplinkAudio = try SampleRateConverter.convert(aligned, from: Room.sampleRate, to: mic.sampleRate)
        let micFrames10ms = (mic.buffer.frameCount * 100 + mic.sampleRate - 1) / mic.sampleRate
        return Result(uplink: uplinkAudio, decisions: Array(decisions.prefix(micFrames10ms)), events: events)
    }
}
