# The device tools served over MCP, bound to the board, the player and the
# power path. Each takes the already validated arguments and returns the
# value the schema's x-result describes (proto.tool_result wraps it).
import proto


def device_tools(board, player, power, wifi_ok=None):
    speaker = board.speaker

    def status(_args):
        net = {"type": "wifi", "connected": bool(board.wifi.isconnected())}
        rssi = board.wifi.rssi()
        if rssi is not None:
            net["rssi"] = rssi
        return {"audio_speaker": {"volume": speaker.volume},
                "network": net,
                "chip": {"board": board.name},
                "player": player.status()}

    def set_volume(args):
        speaker.set_volume(args["volume"])
        return True

    def play(args):
        return player.play(args["name"], args.get("repeat", 1), args.get("power_off_after", False))

    def stop(_args):
        return {"stopped": player.stop()}

    def get_list(_args):
        return {"files": player.listing()}

    def get_status(_args):
        return player.status()

    def power_off(_args):
        player.stop()
        power.request(proto.STANDBY_POWER_OFF)
        return {"accepted": True}

    return {
        "self.get_device_status": status,
        "self.audio_speaker.set_volume": set_volume,
        "self.mp3.play": play,
        "self.mp3.stop": stop,
        "self.mp3.get_list": get_list,
        "self.mp3.get_status": get_status,
        "self.power_off": power_off,
    }
