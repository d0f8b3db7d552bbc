import { describe, expect, it } from "vitest";
import { clientKeyOf, networkKeyOf } from "../../src/lib/client-key";

describe("clientKeyOf (the key of per-client limits)", () => {
  it.each([
    ["an IPv4 address as it is", "198.51.100.7", "198.51.100.7"],
    ["IPv6 by its /64", "2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"],
    ["another address of the same /64 alike", "2001:DB8:1:2::1", "2001:db8:1:2::/64"],
    ["a /64 written with leading zeros alike", "2001:0db8:0001:0002::ffff", "2001:db8:1:2::/64"],
    ["a neighbouring /64 apart", "2001:db8:1:3::1", "2001:db8:1:3::/64"],
    ["an address compressed in its prefix", "2001:db8::1", "2001:db8:0:0::/64"],
    ["an IPv4-mapped IPv6 address as its IPv4", "::ffff:198.51.100.7", "198.51.100.7"],
    ["an IPv4-mapped address in hex as its IPv4", "::ffff:c633:6407", "198.51.100.7"],
    ["the loopback", "::1", "0:0:0:0::/64"],
    ["a zone index dropped", "fe80::1%eth0", "fe80:0:0:0::/64"],
    ["no header as one client", undefined, "unknown"],
    ["something else as itself", "not an address", "other:not an address"],
  ])("keys %s", (_case, header, key) => {
    expect(clientKeyOf(header)).toBe(key);
  });

  it("refuses malformed IPv6 rather than guessing a prefix", () => {
    for (const bad of ["2001:db8::1::2", "1:2:3:4:5:6:7:8:9", "2001:db8:12345::1", "::ffff:300.1.1.1"]) {
      expect(clientKeyOf(bad)).toBe(`other:${bad}`);
    }
  });
});

describe("networkKeyOf (the second, coarser key of an IPv6 client)", () => {
  it.each([
    ["IPv6 by its /48", "2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1::/48"],
    ["every /64 of the /48 alike", "2001:DB8:0001:ffff::1", "2001:db8:1::/48"],
    ["a neighbouring /48 apart", "2001:db8:2:2::1", "2001:db8:2::/48"],
    ["an address compressed in its prefix", "2001:db8::1", "2001:db8:0::/48"],
    ["a zone index dropped", "fe80::1%eth0", "fe80:0:0::/48"],
  ])("keys %s", (_case, header, key) => {
    expect(networkKeyOf(header)).toBe(key);
  });

  it.each([
    ["an IPv4 address", "198.51.100.7"],
    ["an IPv4-mapped IPv6 address", "::ffff:198.51.100.7"],
    ["no header", undefined],
    ["something else", "not an address"],
    ["malformed IPv6", "2001:db8::1::2"],
  ])("gives no second key for %s: it counts under its one key", (_case, header) => {
    expect(networkKeyOf(header)).toBeUndefined();
  });

  it("leaves the /64 key as it was: the /48 is a second key, not a replacement", () => {
    expect(clientKeyOf("2001:db8:1:2::1")).toBe("2001:db8:1:2::/64");
    expect(networkKeyOf("2001:db8:1:2::1")).toBe("2001:db8:1::/48");
  });
});
