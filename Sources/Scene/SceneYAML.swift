import CYaml
import Yams

/// A node of a scene file's YAML, as `SceneYAML.compose` builds it from libyaml's events.
///
/// Yams composes a richer tree, an object for every event and every node's
/// tag, whose making, hashing and freeing cost several times the reading of
/// the scene: a crowd of thousands of sources is megabytes of YAML. A scene
/// needs only text, lines and the little that tells a string from a number.
enum YAMLNode: Hashable {
    case scalar(YAMLScalar)
    case sequence([YAMLNode], line: Int)
    case mapping(YAMLMapping)

    /// The line it starts on, from 1.
    var line: Int {
        switch self {
        case .scalar(let scalar): scalar.line
        case .sequence(_, let line): line
        case .mapping(let mapping): mapping.line
        }
    }

    var scalar: YAMLScalar? {
        if case .scalar(let scalar) = self { scalar } else { nil }
    }

    var string: String? { scalar?.string }

    // Equal as Yams's nodes are, for duplicate keys: by content and tag, wherever they stand.
    static func == (lhs: YAMLNode, rhs: YAMLNode) -> Bool {
        switch (lhs, rhs) {
        case let (.scalar(lhs), .scalar(rhs)): lhs.string == rhs.string && lhs.resolvedTag == rhs.resolvedTag
        case let (.sequence(lhs, _), .sequence(rhs, _)): lhs == rhs
        case let (.mapping(lhs), .mapping(rhs)):
            lhs.pairs.count == rhs.pairs.count && zip(lhs.pairs, rhs.pairs).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    func hash(into hasher: inout Hasher) {
        switch self {
        case .scalar(let scalar):
            hasher.combine(scalar.string)
            hasher.combine(scalar.resolvedTag)
        case .sequence(let items, _):
            hasher.combine(items)
        case .mapping(let mapping):
            for pair in mapping.pairs {
                hasher.combine(pair.key)
                hasher.combine(pair.value)
            }
        }
    }
}

struct YAMLScalar {
    var string: String
    /// Its explicit tag, or YAML's string tag when quoted; nil for an untagged plain scalar.
    var tag: String?
    /// Neither quoted nor a block: only such a scalar reads as a number.
    var plain: Bool
    var line: Int

    static let stringTag = Tag.Name.str.rawValue

    /// The tag Yams's basic resolver gives it: untagged scalars are strings.
    var resolvedTag: String { tag ?? Self.stringTag }

    /// As `Double.construct` reads it. Plain digits, signs, points and
    /// exponents, nearly every number a scene holds, are read directly,
    /// without its Foundation string edits for `_`, `:` and `.inf`.
    var double: Double? {
        guard plain else { return nil }
        let decimal = string.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "e"), UInt8(ascii: "E"): true
            default: false
            }
        }
        return decimal ? Double(string) : Double.construct(from: Node.Scalar(string, .implicit, .plain))
    }

    /// As `Bool.construct` reads it: true, yes, on, false, no, off in any case, unless it is a string by its tag.
    var bool: Bool? {
        guard tag != Self.stringTag else { return nil }
        switch string.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default: return nil
        }
    }
}

/// A key and its value: a struct, not a tuple, whose arrays the runtime frees far faster.
struct YAMLPair {
    var key: YAMLNode
    var value: YAMLNode
}

struct YAMLMapping {
    var pairs: [YAMLPair]
    var line: Int

    /// The value of the last key that is `key` as text, as Yams's mapping
    /// subscript finds it; setting nil removes it, a new key goes at the end.
    subscript(key: String) -> YAMLNode? {
        get { index(of: key).map { pairs[$0].value } }
        set {
            switch (index(of: key), newValue) {
            case let (index?, value?): pairs[index].value = value
            case let (index?, nil): pairs.remove(at: index)
            case let (nil, value?): pairs.append(YAMLPair(key: .scalar(YAMLScalar(string: key, tag: nil, plain: true, line: line)), value: value))
            case (nil, nil): break
            }
        }
    }

    private func index(of key: String) -> Int? {
        pairs.lastIndex { $0.key.scalar.map { $0.string == key && $0.resolvedTag == YAMLScalar.stringTag } ?? false }
    }
}

/// Why text is no YAML a scene can be read from, with libyaml's own words.
enum YAMLProblem: Error {
    case unreadable(String)
    case invalid(String, line: Int)
    /// The keys, in order, and the line of the first's first use.
    case duplicateKeys([String], line: Int)
    case memory
}

/// Composes the single document of YAML text from libyaml's events, as
/// Yams's `compose` with its basic resolver would, into `YAMLNode`s.
final class SceneYAML {
    // Only this composer touches them, one call at a time.
    @exclusivity(unchecked) private var parser = yaml_parser_t()
    @exclusivity(unchecked) private var event = yaml_event_t()
    @exclusivity(unchecked) private var anchors: [String: YAMLNode] = [:]

    /// The document's root, or nil when the text holds none.
    static func compose(_ text: String) throws -> YAMLNode? {
        var text = text
        return try text.withUTF8 { bytes in
            let composer = SceneYAML()
            defer { composer.close() }
            yaml_parser_set_encoding(&composer.parser, YAML_UTF8_ENCODING)
            yaml_parser_set_input_string(&composer.parser, bytes.baseAddress, bytes.count)
            return try composer.document()
        }
    }

    private init() {
        yaml_parser_initialize(&parser)
    }

    private func close() {
        yaml_event_delete(&event)
        yaml_parser_delete(&parser)
    }

    private func document() throws -> YAMLNode? {
        _ = try next()  // the stream's start
        guard try next() != YAML_STREAM_END_EVENT else { return nil }
        _ = try next()
        let root = try node()
        _ = try next()  // the document's end
        if try next() != YAML_STREAM_END_EVENT {
            throw YAMLProblem.invalid("but found another document", line: startLine)
        }
        return root
    }

    private func next() throws -> yaml_event_type_t {
        yaml_event_delete(&event)
        guard yaml_parser_parse(&parser, &event) == 1 else {
            let problem = parser.problem.map { String(cString: $0) } ?? ""
            throw switch parser.error {
            case YAML_MEMORY_ERROR: YAMLProblem.memory
            case YAML_READER_ERROR: YAMLProblem.unreadable(problem)
            default: YAMLProblem.invalid(problem, line: Int(parser.problem_mark.line) + 1)
            }
        }
        return event.type
    }

    private var startLine: Int { Int(event.start_mark.line) + 1 }

    /// The node whose first event is the current one.
    private func node() throws -> YAMLNode {
        let line = startLine
        switch event.type {
        case YAML_ALIAS_EVENT:
            guard let node = anchors[String(cString: event.data.alias.anchor)] else {
                throw YAMLProblem.invalid("found undefined alias", line: line)
            }
            return node
        case YAML_SCALAR_EVENT:
            let scalar = event.data.scalar
            let tag = scalar.quoted_implicit == 1 ? YAMLScalar.stringTag : scalar.tag.map { String(cString: $0) }
            let node = YAMLNode.scalar(YAMLScalar(
                string: String(decoding: UnsafeBufferPointer(start: scalar.value, count: scalar.length), as: UTF8.self),
                tag: tag, plain: scalar.style == YAML_PLAIN_SCALAR_STYLE || scalar.style == YAML_ANY_SCALAR_STYLE, line: line))
            register(scalar.anchor, node)
            return node
        case YAML_SEQUENCE_START_EVENT:
            let anchor = event.data.sequence_start.anchor.map { String(cString: $0) }
            var items: [YAMLNode] = []
            while try next() != YAML_SEQUENCE_END_EVENT {
                items.append(try node())
            }
            let node = YAMLNode.sequence(items, line: line)
            if let anchor { anchors[anchor] = node }
            return node
        case YAML_MAPPING_START_EVENT:
            let anchor = event.data.mapping_start.anchor.map { String(cString: $0) }
            var pairs: [YAMLPair] = []
            while try next() != YAML_MAPPING_END_EVENT {
                let key = try node()
                _ = try next()
                pairs.append(YAMLPair(key: key, value: try node()))
            }
            try Self.checkDuplicates(pairs)
            let node = YAMLNode.mapping(YAMLMapping(pairs: pairs, line: line))
            if let anchor { anchors[anchor] = node }
            return node
        default:
            preconditionFailure("libyaml starts a node with an alias, a scalar, a sequence or a mapping")
        }
    }

    private func register(_ anchor: UnsafeMutablePointer<yaml_char_t>?, _ node: YAMLNode) {
        if let anchor { anchors[String(cString: anchor)] = node }
    }

    /// Refuses a mapping that has a key twice, naming every such key as Yams does.
    private static func checkDuplicates(_ pairs: [YAMLPair]) throws {
        guard pairs.count > 1, repeats(pairs) else { return }
        var uses: [YAMLNode: Int] = [:]
        var firsts: [YAMLNode] = []
        for pair in pairs {
            if uses[pair.key] == nil { firsts.append(pair.key) }
            uses[pair.key, default: 0] += 1
        }
        let duplicated = firsts.filter { uses[$0]! > 1 }.sorted { ($0.string ?? "") < ($1.string ?? "") }
        throw YAMLProblem.duplicateKeys(duplicated.map { $0.string ?? "<uncovertable>" }, line: duplicated[0].line)
    }

    /// Whether a key comes twice. Most mappings are a few keys, compared
    /// pairwise more cheaply than hashed.
    private static func repeats(_ pairs: [YAMLPair]) -> Bool {
        guard pairs.count <= 8 else { return Set(pairs.map(\.key)).count < pairs.count }
        for later in 1..<pairs.count {
            for earlier in 0..<later where pairs[earlier].key == pairs[later].key { return true }
        }
        return false
    }
}
