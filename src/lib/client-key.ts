import type { Context } from "hono";

/**
 * The key a per-client limit counts a request under: an IPv4 address as it is, an IPv6 address by its
 * /64 (the smallest block an ISP or a host hands one subscriber, so every address of it is one client),
 * an IPv4-mapped IPv6 address as its IPv4. On Cloudflare, CF-Connecting-IP always holds the client's
 * address; without it (local development) every request is the one client "unknown".
 */
export function clientKey(c: Context): string {
  return clientKeyOf(c.req.header("CF-Connecting-IP"));
}

/**
 * The keys a request counts under: its client's (clientKey), and for an IPv6 client its /48's too. A /48
 * is what an ISP may hand one site and a host one customer: 65,536 /64s, which one holder could otherwise
 * use as as many clients. IPv4 has no such block to count: an address is already scarce.
 */
export function clientKeys(c: Context): { client: string; network: string | undefined } {
  const address = c.req.header("CF-Connecting-IP");
  return { client: clientKeyOf(address), network: networkKeyOf(address) };
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** The address as a limit reads it: IPv4 (an IPv4-mapped IPv6 address included), IPv6, or neither. */
function parseAddress(address: string | undefined): { v4: string } | { v6: number[] } | { other: string } {
  const ip = (address ?? "").trim().toLowerCase();
  if (IPV4.test(ip)) return { v4: ip };
  const groups = ipv6Groups(ip);
  if (!groups) return { other: ip };
  // ::ffff:a.b.c.d is an IPv4 client.
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return { v4: [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join(".") };
  }
  return { v6: groups };
}

/**
 * The first `count` groups of an IPv6 address, as a key with its prefix length: `2001:db8:1:2::/64`, `2001:db8:1::/48`.
 */
const prefixKey = (groups: number[], count: number) =>
  `${groups
    .slice(0, count)
    .map((group) => group.toString(16))
    .join(":")}::/${count * 16}`;

/** clientKey for the value of CF-Connecting-IP. */
export function clientKeyOf(address: string | undefined): string {
  const parsed = parseAddress(address);
  if ("v4" in parsed) return parsed.v4;
  if ("v6" in parsed) return prefixKey(parsed.v6, 4);
  return parsed.other === "" ? "unknown" : `other:${parsed.other.slice(0, 64)}`;
}

/** The /48 key of an IPv6 address (CF-Connecting-IP); undefined for IPv4, an IPv4-mapped address, or no address. */
export function networkKeyOf(address: string | undefined): string | undefined {
  const parsed = parseAddress(address);
  return "v6" in parsed ? prefixKey(parsed.v6, 3) : undefined;
}

/**
 * The client's address as a record keeps it (the audit log): an IPv4 address cut to its /24 (`203.0.113.0/24`), an
 * IPv6 address to its /48 (`2001:db8:1::/48`), an IPv4-mapped one as IPv4; null for no address or another value.
 */
export function recordedNetworkOf(address: string | undefined): string | null {
  const parsed = parseAddress(address);
  if ("v4" in parsed) return `${parsed.v4.split(".").slice(0, 3).join(".")}.0/24`;
  if ("v6" in parsed) return prefixKey(parsed.v6, 3);
  return null;
}

/** The eight 16-bit groups of an IPv6 address (with `::` and a trailing dotted IPv4 allowed), or undefined. */
function ipv6Groups(ip: string): number[] | undefined {
  let text = ip.replace(/%.*$/, ""); // a zone index names an interface, not a client
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    if (!IPV4.test(dotted[2]!)) return undefined;
    const [a, b, c, d] = dotted[2]!.split(".").map(Number) as [number, number, number, number];
    text = `${dotted[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const parse = (half: string) => (half === "" ? [] : half.split(":"));
  const head = parse(halves[0]!);
  const tail = halves.length === 2 ? parse(halves[1]!) : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...tail];
  if (!groups.every((group) => /^[0-9a-f]{1,4}$/.test(group))) return undefined;
  return groups.map((group) => parseInt(group, 16));
}
