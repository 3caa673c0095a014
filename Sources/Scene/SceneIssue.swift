/// One thing wrong with a scene: where it is, what it says, and why it is refused.
public struct SceneIssue: Error, Sendable, Equatable, CustomStringConvertible {
    public let file: String
    /// 1-based line, when the problem has a place in the file.
    public let line: Int?
    /// Path of the field, like `sources[2].gain`; empty for the whole document.
    public let field: String
    /// The offending value as written, when there is one.
    public let value: String?
    public let reason: String

    public init(file: String, line: Int?, field: String, value: String? = nil, reason: String) {
        self.file = file
        self.line = line
        self.field = field
        self.value = value
        self.reason = reason
    }

    /// `tavern.yaml:12: sources[1].gain: "loud": expected a number (dB)`
    public var description: String {
        var text = file
        if let line { text += ":\(line)" }
        text += ":"
        if !field.isEmpty { text += " \(field):" }
        if let value { text += " \(Self.quoted(value)):" }
        return text + " \(reason)"
    }

    private static func quoted(_ value: String) -> String {
        let shown = value.count > 60 ? value.prefix(57) + "..." : Substring(value)
        return "\"\(shown.replacingOccurrences(of: "\n", with: "\\n"))\""
    }
}

/// A scene refused with every problem found in it, in file order.
public struct SceneValidationError: Error, Sendable, CustomStringConvertible {
    public let issues: [SceneIssue]

    public init(issues: [SceneIssue]) {
        self.issues = issues.sorted { ($0.file, $0.line ?? 0) < ($1.file, $1.line ?? 0) }
    }

    public var description: String {
        issues.map(\.description).joined(separator: "\n")
    }
}

/// Where a field stands in a scene file, kept so that problems found later
/// (in the audio file a field names, say) are reported at the field.
public struct FieldLocation: Sendable, Equatable {
    public let file: String
    public let line: Int?
    public let field: String

    public init(file: String, line: Int?, field: String) {
        self.file = file
        self.line = line
        self.field = field
    }

    public func issue(value: String? = nil, _ reason: String) -> SceneIssue {
        SceneIssue(file: file, line: line, field: field, value: value, reason: reason)
    }
}
