/* net.c: a network device (solo5-spt.md §3.2, §3.5): the manifest copy gives
 * its MAC and MTU and hostfd; the guest waits in epoll_pwait for the tap to be
 * readable (its event carries the device's manifest index), reads one frame
 * and writes one back.
 *   net   wait up to 10 s for a frame of EtherType 0x88B5, answer its sender
 *         with "conform net reply to N bytes" from the guest's MAC, exit 0 */
#include "conform.h"

#define ETHERTYPE 0x88b5

static uint8_t frame[9216 + 14];

void conform_net(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    uint64_t h;
    const struct mft_entry *e = device("service", MFT_NET_BASIC, &h);
    check("service attached", e != NULL, "no NET_BASIC device 'service' in the manifest copy");
    uint8_t mac[6];
    uint16_t mtu;
    memcpy(mac, e->props, 6);
    memcpy(&mtu, e->props + 6, 2);
    put_s("conform net: mac=");
    put_mac(mac);
    put_s(" mtu=");
    put_u(mtu);
    put_s("\n");
    flush();

    const uint64_t deadline = monotonic_ns() + 10000000000ULL;
    uint64_t len = 0;
    for (;;) {
        const uint64_t now = monotonic_ns();
        if (now >= deadline) {
            note("net: FAILED no frame within 10 s");
            halt(1);
        }
        if (!(plat_poll(deadline - now) & (1ULL << h)))
            continue;
        len = (uint64_t)mtu + 14 <= sizeof frame ? (uint64_t)mtu + 14 : sizeof frame;
        if (plat_net_read(h, frame, &len) == SOLO5_R_OK && len >= 14 && frame[12] == (ETHERTYPE >> 8) &&
            frame[13] == (ETHERTYPE & 0xff))
            break;
    }
    put_s("conform net: received ");
    put_u(len);
    put_s(" bytes from ");
    put_mac(frame + 6);
    put_s("\n");

    uint8_t peer[6];
    memcpy(peer, frame + 6, 6);
    memset(frame, 0, 60);
    memcpy(frame, peer, 6);
    memcpy(frame + 6, mac, 6);
    frame[12] = ETHERTYPE >> 8;
    frame[13] = ETHERTYPE & 0xff;
    static const char text[] = "conform net reply to ";
    memcpy(frame + 14, text, sizeof text - 1);
    size_t n = 14 + sizeof text - 1;
    n += decimal(frame + n, len);
    frame[n++] = ' ';
    memcpy(frame + n, "bytes", 5);
    check("reply written", plat_net_write(h, frame, 60) == SOLO5_R_OK, "refused");
    halt(0);
}
