/// One thing wrong with a scene: where it is, what it says, and why it is refused.
public struct SceneIssue: Error, Sendable, Equatable, CustomStringConvertible {
    /// The scene file the problem is in, or the origin named for an entry that came another way.
    public let file: String
    /// 1-based line, when the problem has a place in the file.
    public let line: Int?
    /// Path of the field, like `sources[2].gain`; empty for the whole document.
    public let field: String
    /// The offending value as written, when there is one.
    public let value: String?
    /// Why the value is refused, in plain words.
    public let reason: String

    /// Makes an issue at `line` of `file`, naming the field, the value as written and the reason.
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
        return Self.escaped(text + " \(reason)")
    }

    private static func quoted(_ value: String) -> String {
        let shown = value.count > 60 ? value.prefix(57) + "..." : Substring(value)
        return "\"\(shown)\""
    }

    /// Control characters escaped, so that a scene's text (a value, a path
    /// in the reason) cannot move the terminal's cursor or rename its window.
    private static func escaped(_ text: String) -> String {
        text.unicodeScalars.map { scalar -> String in
            switch scalar {
            case "\n": "\\n"
            case "\t": "\\t"
            case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value): "\\u{\(String(scalar.value, radix: 16))}"
            default: String(scalar)
            }
        }.joined()
    }
}

/// A scene refused with every problem found in it, in file order.
public struct SceneValidationError: Error, Sendable, CustomStringConvertible {
    /// Every problem found, sorted by file and line.
    public let issues: [SceneIssue]

    /// Makes the error, sorting `issues` by file and line.
    public init(issues: [SceneIssue]) {
        self.issues = issues.sorted { ($0.file, $0.line ?? 0) < ($1.file, $1.line ?? 0) }
    }

    /// Every issue's `description`, one a line.
    public var description: String {
        issues.map(\.description).joined(separator: "\n")
    }
}

/// Where a field stands in a scene file, kept so that problems found later
/// (in the audio file a field names, say) are reported at the field.
public struct FieldLocation: Sendable, Equatable {
    /// The scene file the field is in.
    public let file: String
    /// 1-based line of the field, when it has one.
    public let line: Int?
    /// Path of the field, like `sources[2].file`.
    public let field: String

    /// Makes the location of `field` at `line` of `file`.
    public init(file: String, line: Int?, field: String) {
        self.file = file
        self.line = line
        self.field = field
    }

    /// An issue at this field, with the offending value and the reason.
    public func issue(value: String? = nil, _ reason: String) -> SceneIssue {
        SceneIssue(file: file, line: line, field: field, value: value, reason: reason)
    }
}
