/* net.c: the net modes (canary-net, net device "service"). Frames are raw
 * Ethernet with the local-experimental EtherType 0x88B5, so tests can pick
 * them out of whatever else crosses the bridge.
 *   net-send  one broadcast frame from the guest's MAC (after 100 ms), then HALT 0
 *   net-echo  returns every 0x88B5 frame to its sender (read after POLL)
 *             with the guest's MAC as source, until killed */
#include "canary.h"

#define ETHERTYPE_CANARY 0x88b5

static uint8_t frame[9216 + 14]; /* a jumbo MTU and its header */

static const struct mft_entry *service(uint64_t *handle, uint8_t mac[6], uint16_t *mtu)
{
    const struct mft_entry *e = device("service", MFT_NET_BASIC, handle);
    if (e == NULL) {
        say("net no service device");
        halt(2);
    }
    memcpy(mac, e->props, 6);
    memcpy(mtu, e->props + 6, 2);
    return e;
}

void mode_net_send(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    uint64_t h;
    uint8_t mac[6];
    uint16_t mtu;
    service(&h, mac, &mtu);

    static const char payload[] = "petrel-canary net-send";
    memset(frame, 0, 60);
    memset(frame, 0xff, 6);
    memcpy(frame + 6, mac, 6);
    frame[12] = ETHERTYPE_CANARY >> 8;
    frame[13] = ETHERTYPE_CANARY & 0xff;
    memcpy(frame + 14, payload, sizeof payload - 1);
    uint64_t len = 60; /* the Ethernet minimum without FCS */
    /* The tap's carrier came up when the tender attached it, moments ago; a
     * bridge starts forwarding from the port asynchronously after that. Give
     * it time rather than send into a port that still drops. */
    sleep_ns(100000000ULL);
    int32_t r = plat_net_write(h, frame, len);

    put_s("petrel-canary net-send ret=");
    put_i(r);
    put_s(" mac=");
    put_mac(mac);
    put_s(" mtu=");
    put_u(mtu);
    put_s("\n");
    halt(r == SOLO5_R_OK ? 0 : 3);
}

void mode_net_echo(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    uint64_t h;
    uint8_t mac[6];
    uint16_t mtu;
    service(&h, mac, &mtu);
    put_s("petrel-canary net-echo ready mac=");
    put_mac(mac);
    put_s("\n");
    flush();

    uint64_t echoed = 0;
    for (;;) {
        if (!(plat_poll(1000000000ULL) & (1ULL << h)))
            continue;
        for (;;) {
            uint64_t len = (uint64_t)mtu + 14 <= sizeof frame ? (uint64_t)mtu + 14 : sizeof frame;
            int32_t r = plat_net_read(h, frame, &len);
            if (r != SOLO5_R_OK)
                break;
            if (len < 14 || frame[12] != (ETHERTYPE_CANARY >> 8) || frame[13] != (ETHERTYPE_CANARY & 0xff))
                continue;
            memcpy(frame, frame + 6, 6);
            memcpy(frame + 6, mac, 6);
            r = plat_net_write(h, frame, len);
            put_s("petrel-canary echoed ");
            put_u(++echoed);
            put_s(" ret=");
            put_i(r);
            put_s("\n");
            flush();
        }
    }
}
