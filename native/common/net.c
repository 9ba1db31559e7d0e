/* net.c: the net module: --net and --net-mac (solo5.md §1.4), tap attachment
 * (§3.14) and NET_WRITE / NET_READ (§3.11). Frames are raw Ethernet: no
 * packet-information header, no virtio-net header. The tender never creates
 * taps; the daemon does. */
#include "devices.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/if_tun.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"

#define IFACE_WORD 19 /* solo5 reads at most 19 characters, then IFNAMSIZ applies */

static void set_offload(int s, const char *iface, uint32_t cmd)
{
    struct ethtool_value ev = {.cmd = cmd, .data = 0};
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    memcpy(ifr.ifr_name, iface, strlen(iface));
    ifr.ifr_data = (void *)&ev;
    (void)ioctl(s, SIOCETHTOOL, &ifr); /* best effort, as in solo5 */
}

/* Returns the tap descriptor, or -1 with errno set to what the operator
 * should read: ENOENT missing, ENETDOWN down, EBUSY taken, ENAMETOOLONG. */
static int tap_attach(const char *iface, uint16_t *mtu)
{
    struct ifreq ifr;
    int s = -1, fd = -1, e;

    if (strlen(iface) >= IFNAMSIZ) {
        errno = ENAMETOOLONG;
        return -1;
    }
    s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    memset(&ifr, 0, sizeof ifr);
    memcpy(ifr.ifr_name, iface, strlen(iface));
    if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
        e = errno == ENODEV ? ENOENT : errno;
        goto fail;
    }
    if (!(ifr.ifr_flags & (IFF_UP | IFF_RUNNING))) {
        e = ENETDOWN;
        goto fail;
    }
    /* Non-blocking: NET_READ must return AGAIN, never stall the vCPU. */
    fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        e = errno;
        goto fail;
    }
    memset(&ifr, 0, sizeof ifr);
    memcpy(ifr.ifr_name, iface, strlen(iface));
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
        e = errno;
        goto fail;
    }
    /* A name the kernel expanded (say "tap%d") would be a new interface. */
    if (strncmp(ifr.ifr_name, iface, IFNAMSIZ) != 0) {
        e = ENOENT;
        goto fail;
    }
    memset(&ifr, 0, sizeof ifr);
    memcpy(ifr.ifr_name, iface, strlen(iface));
    if (ioctl(s, SIOCGIFMTU, &ifr) < 0) {
        e = errno;
        goto fail;
    }
    *mtu = (uint16_t)ifr.ifr_mtu;
    /* Without a virtio-net header the kernel must not hand us aggregated
     * frames larger than the guest's MTU-sized buffer. */
    set_offload(s, iface, ETHTOOL_SGRO);
    set_offload(s, iface, ETHTOOL_SGSO);
    close(s);
    return fd;
fail:
    if (fd >= 0)
        close(fd);
    close(s);
    errno = e;
    return -1;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
    for (int i = 0; i < 6; i++) {
        unsigned v = 0, digits = 0;
        for (; digits < 2; digits++, s++) {
            unsigned c = (unsigned char)*s;
            unsigned d = c >= '0' && c <= '9'   ? c - '0'
                         : c >= 'a' && c <= 'f' ? c - 'a' + 10
                         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                : 16;
            if (d == 16)
                break;
            v = v * 16 + d;
        }
        if (digits == 0)
            return 0;
        mac[i] = (uint8_t)v;
        if (i < 5 && *s++ != ':')
            return 0;
    }
    return 1; /* trailing text is ignored, as solo5 does */
}

bool net_option(const char *word, const struct manifest *m)
{
    char name[MFT_NAME_SIZE];
    const char *rest;

    if (strncmp(word, "--net:", 6) == 0 && (rest = device_name(word + 6, name)) != NULL) {
        char iface[IFACE_WORD + 1];
        if (scan_word(rest, iface, IFACE_WORD) == 0)
            return false;
        int i = device_declared(m, name, MFT_NET_BASIC);
        if (i < 0)
            return false;
        if (iface[0] == '@') {
            /* solo5 v0.12.1 documents @FD but never learns its MTU and so
             * always refuses it; refusing with its words keeps the two alike. */
            warn_msg("Could not attach interface: %s: Success", iface);
            return false;
        }
        uint16_t mtu = 0;
        int fd = tap_attach(iface, &mtu);
        if (fd < 0) {
            warn_errno("Could not attach interface: %s", iface);
            return false;
        }
        devices[i].fd = fd;
        devices[i].kind = MFT_NET_BASIC;
        devices[i].mtu = mtu;
        return true;
    }
    if (strncmp(word, "--net-mac:", 10) == 0 && (rest = device_name(word + 10, name)) != NULL) {
        uint8_t mac[6];
        if (!parse_mac(rest, mac))
            return false;
        int i = device_declared(m, name, MFT_NET_BASIC);
        if (i < 0)
            return false;
        memcpy(devices[i].mac, mac, 6);
        devices[i].mac_given = true;
        return true;
    }
    return false;
}

unsigned net_pollable(int fds[MFT_MAX_ENTRIES], unsigned handles[MFT_MAX_ENTRIES])
{
    unsigned n = 0;
    for (unsigned i = 0; i < MFT_MAX_ENTRIES; i++)
        if (devices[i].kind == MFT_NET_BASIC && devices[i].fd >= 0) {
            fds[n] = devices[i].fd;
            handles[n++] = i;
        }
    return n;
}
