// The buffer handle → record table: a dictionary's subscript, without a dictionary's cost.
//
// Every binding of every dispatch looks its buffer up here (and every buffer call does), with
// thousands of live buffers. Swift's Dictionary hashes each UInt64 key with SipHash (seeded per
// process) — a few hundred instructions a lookup, measured with callgrind on mg_batch_submit.
// Handles are distinct serials (Runtime.swift), so a multiplicative hash spreads them well: open
// addressing with linear probing, at most half full, deletion by backward shift (no tombstones).
struct HandleTable<Value: AnyObject> {
    /// 0 marks an empty slot: no handle is 0 (serials start at 1).
    private var keys: [UInt64]
    private var values: [Value?]
    private var mask: Int
    private var shift: UInt64
    private(set) var count = 0

    init() {
        keys = [UInt64](repeating: 0, count: 64)
        values = [Value?](repeating: nil, count: 64)
        mask = 63
        shift = 64 - 6
    }

    @inline(__always)
    private func home(_ key: UInt64) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    subscript(key: UInt64) -> Value? {
        get {
            guard key != 0 else { return nil }
            var slot = home(key)
            while true {
                let k = keys[slot]
                if k == key { return values[slot] }
                if k == 0 { return nil }
                slot = (slot + 1) & mask
            }
        }
        set {
            guard key != 0 else { return }
            if let newValue { insert(key, newValue) } else { remove(key) }
        }
    }

    private mutating func insert(_ key: UInt64, _ value: Value) {
        var slot = home(key)
        while true {
            let k = keys[slot]
            if k == key {
                values[slot] = value
                return
            }
            if k == 0 { break }
            slot = (slot + 1) & mask
        }
        keys[slot] = key
        values[slot] = value
        count += 1
        if count * 2 > keys.count { grow() }
    }

    private mutating func remove(_ key: UInt64) {
        var slot = home(key)
        while true {
            let k = keys[slot]
            if k == 0 { return }
            if k == key { break }
            slot = (slot + 1) & mask
        }
        // Backward shift: move later entries of the probe run into the hole when their home slot
        // does not lie cyclically in (hole, their slot].
        var hole = slot
        var next = (hole + 1) & mask
        while keys[next] != 0 {
            let want = home(keys[next])
            let between = hole <= next ? (hole < want && want <= next) : (hole < want || want <= next)
            if !between {
                keys[hole] = keys[next]
                values[hole] = values[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        keys[hole] = 0
        values[hole] = nil
        count -= 1
    }

    private mutating func grow() {
        let oldKeys = keys
        let oldValues = values
        let capacity = keys.count * 2
        keys = [UInt64](repeating: 0, count: capacity)
        values = [Value?](repeating: nil, count: capacity)
        mask = capacity - 1
        shift -= 1
        count = 0
        for i in 0..<oldKeys.count where oldKeys[i] != 0 {
            insert(oldKeys[i], oldValues[i]!)
        }
    }
}
